package resource

import (
	"context"
	"fmt"

	"haven/config"
	"haven/resource/ocf"
)

// CheckOCF checks the [ocf.NAME] resources of cfg against the meta-data
// of their agents, where the agents are installed under root (node.toml
// ocf_root): a parameter the agent does not have, a required one missing,
// an agent Haven cannot run (promotable or clone only). The errors name
// the file, the line and the key, with the agent's own description of its
// parameters. notes say what could not be checked here (an agent not
// installed on this node: this node cannot run it either).
func CheckOCF(ctx context.Context, cfg *config.ServiceConfig, root string) (notes []string, err error) {
	if root == "" {
		root = ocf.DefaultRoot
	}
	var errs []*config.Error
	mds := map[string]*ocf.Metadata{}
	for _, r := range cfg.Resources {
		if r.Type != config.SectionOCF {
			continue
		}
		prov, typ, perr := config.ParseAgent(r.Agent)
		if perr != nil {
			errs = append(errs, cfg.ErrorAt(r.RID, "agent", perr.Error()))
			continue
		}
		a := ocf.Agent{Root: root, Provider: prov, Type: typ}
		if rerr := ocf.Refused(a, nil); rerr != nil {
			// by its name: refused on every node, installed or not
			errs = append(errs, cfg.ErrorAt(r.RID, "agent", rerr.Error()))
			continue
		}
		if ierr := a.Installed(); ierr != nil {
			notes = append(notes, fmt.Sprintf("%s: %v: its parameters are not checked here, and this node cannot run it (the service is placed on the nodes that have it)", r.RID, ierr))
			continue
		}
		md, ok := mds[a.Path()]
		if !ok {
			var merr error
			if md, merr = ReadOCFMetadata(ctx, a); merr != nil {
				notes = append(notes, fmt.Sprintf("%s: parameters not checked: %v", r.RID, merr))
			}
			mds[a.Path()] = md
		}
		if rerr := ocf.Refused(a, md); rerr != nil {
			errs = append(errs, cfg.ErrorAt(r.RID, "agent", rerr.Error()))
			continue
		}
		if md == nil {
			continue
		}
		for _, pe := range md.CheckParams(a.Name(), r.Params) {
			errs = append(errs, cfg.ErrorAt(r.RID, pe.Key, pe.Msg))
		}
	}
	switch len(errs) {
	case 0:
		return notes, nil
	case 1:
		return notes, errs[0]
	}
	return notes, config.Errors(errs)
}
