package arbitrator

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the arbitrator's Prometheus metrics, read from Status at each
// scrape (docs/metrics.md, "The one-vote arbitrator").
func (s *Server) Metrics() prometheus.Collector { return collector{s} }

type collector struct{ s *Server }

var (
	descReports  = prometheus.NewDesc("haven_arbitrator_reports_total", "Reports answered since the arbitrator started (granted or refused).", nil, nil)
	descGrants   = prometheus.NewDesc("haven_arbitrator_grants_total", "Reports answered with a grant of the vote.", nil, nil)
	descRefusals = prometheus.NewDesc("haven_arbitrator_refusals_total", "Reports answered with a refusal: another partition holds the vote, or the start-up wait.", nil, nil)
	descRejected = prometheus.NewDesc("haven_arbitrator_rejected_total", "Datagrams dropped unanswered: malformed, of an unknown cluster, not authentic, replayed or reordered, or sent too long ago.", nil, nil)
	descNotOwn   = prometheus.NewDesc("haven_arbitrator_rejected_not_own_key_total", "Reports dropped (counted in haven_arbitrator_rejected_total too) for not being sealed with the key of the node they name: with the cluster secret alone from a node whose key arbitrator.toml lists, with a pairwise key that does not open them, or with a node key it does not list.", nil, nil)
	descWinner   = prometheus.NewDesc("haven_arbitrator_winner_size", "Members of the partition that holds the cluster's vote (0: none yet).", []string{"cluster"}, nil)
	descHolders  = prometheus.NewDesc("haven_arbitrator_lease_holders", "Nodes of the cluster whose lease has not ended.", []string{"cluster"}, nil)
	descGranted  = prometheus.NewDesc("haven_arbitrator_node_granted", "1 when the node's last report was granted the vote, 0 when refused.", []string{"cluster", "node"}, nil)
	descLast     = prometheus.NewDesc("haven_arbitrator_node_last_report_timestamp_seconds", "When the node's last report came (Unix time).", []string{"cluster", "node"}, nil)
)

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descReports, descGrants, descRefusals, descRejected, descNotOwn, descWinner, descHolders, descGranted, descLast} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Status()
	ch <- prometheus.MustNewConstMetric(descReports, prometheus.CounterValue, float64(st.Counters.Reports))
	ch <- prometheus.MustNewConstMetric(descGrants, prometheus.CounterValue, float64(st.Counters.Grants))
	ch <- prometheus.MustNewConstMetric(descRefusals, prometheus.CounterValue, float64(st.Counters.Refusals))
	ch <- prometheus.MustNewConstMetric(descRejected, prometheus.CounterValue, float64(st.Counters.Rejected))
	ch <- prometheus.MustNewConstMetric(descNotOwn, prometheus.CounterValue, float64(st.Counters.NotOwnKey))
	for _, cs := range st.Clusters {
		ch <- prometheus.MustNewConstMetric(descWinner, prometheus.GaugeValue, float64(len(cs.Winner)), cs.Name)
		ch <- prometheus.MustNewConstMetric(descHolders, prometheus.GaugeValue, float64(len(cs.Holders)), cs.Name)
		for _, n := range cs.Nodes {
			g := 0.0
			if n.Granted {
				g = 1
			}
			ch <- prometheus.MustNewConstMetric(descGranted, prometheus.GaugeValue, g, cs.Name, n.Node)
			ch <- prometheus.MustNewConstMetric(descLast, prometheus.GaugeValue, float64(n.LastReport.UnixMilli())/1000, cs.Name, n.Node)
		}
	}
}
