#!/bin/sh
# Builds haven_VERSION_ARCH.deb with dpkg-deb from a tree installed by
# `make install DESTDIR=STAGE` (one list of installed files: the Makefile's).
#
#   packaging/deb.sh STAGE VERSION ARCH OUTDIR
#
# MAINTAINER (default: git's user.name <user.email>) fills the control file.
set -eu
stage=$1 version=$2 arch=$3 out=$4
here=$(cd "$(dirname "$0")" && pwd)

case "$arch" in # Go's GOARCH to Debian's architecture
386) arch=i386 ;;
arm) arch=armhf ;;
ppc64le) arch=ppc64el ;;
esac

if [ -z "${MAINTAINER:-}" ]; then
	name=$(git config user.name 2>/dev/null || true)
	email=$(git config user.email 2>/dev/null || true)
	MAINTAINER="${name:-Haven maintainers} <${email:-haven@users.noreply.github.com}>"
fi

doc="$stage/usr/share/doc/haven"
install -d -m 0755 "$doc" "$stage/DEBIAN"
install -m 0644 "$here/debian/copyright" "$doc/copyright"
# a native package's changelog: this build
date=$(date -R -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
printf 'haven (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n' \
	"$version" "$commit" "$MAINTAINER" "$date" | gzip -9n >"$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"

for s in postinst prerm postrm; do
	install -m 0755 "$here/debian/$s" "$stage/DEBIAN/$s"
done
# every file shipped under /etc is a conffile (today: the logrotate snippet;
# never a cluster.toml: it would hold a secret)
(cd "$stage" && find etc -type f 2>/dev/null | sed 's|^|/|' | LC_ALL=C sort) >"$stage/DEBIAN/conffiles"
[ -s "$stage/DEBIAN/conffiles" ] || rm -f "$stage/DEBIAN/conffiles"
if grep -q '/etc/haven/' "$stage/DEBIAN/conffiles" 2>/dev/null; then
	echo "deb.sh: refusing to ship files under /etc/haven" >&2
	exit 1
fi
size=$(du -k -s --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" \
	-e "s|@MAINTAINER@|$MAINTAINER|" "$here/debian/control.in" >"$stage/DEBIAN/control"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
	xargs md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"
[ ! -e "$stage/DEBIAN/conffiles" ] || chmod 0644 "$stage/DEBIAN/conffiles"

deb="$out/haven_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
