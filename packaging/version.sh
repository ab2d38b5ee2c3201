#!/bin/sh
# Prints the version stamped into the binaries and the .deb:
#  - on a tag vX.Y.Z: X.Y.Z
#  - after a tag: X.Y.Z+N.gHASH (N commits after the tag)
#  - without a tag: VERSION~gitN.gHASH (N commits in all), VERSION being the
#    release in preparation, so that a later release X.Y.Z sorts after every
#    snapshot of it (dpkg --compare-versions 0.1.0~git5.gabc lt 0.1.0)
#  - without git (a source tarball): the VERSION file
# "-dirty" is never added: dpkg versions cannot hold it; the commit says it.
set -eu
cd "$(dirname "$0")/.."
base=$(cat VERSION)
if ! git rev-parse --git-dir >/dev/null 2>&1; then
  echo "$base"
  exit 0
fi
if desc=$(git describe --tags --long --match 'v[0-9]*' 2>/dev/null); then
  # v1.2.3-N-gHASH
  tag=${desc%-*-g*}
  rest=${desc#"$tag"-}
  n=${rest%%-*}
  hash=${rest#*-}
  if [ "$n" = 0 ]; then
    echo "${tag#v}"
  else
    echo "${tag#v}+$n.$hash"
  fi
  exit 0
fi
echo "$base~git$(git rev-list --count HEAD).g$(git rev-parse --short=7 HEAD)"
