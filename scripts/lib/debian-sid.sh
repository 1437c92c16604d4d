# Debian sid's packages without touching the machine's own apt state: sid's index is read
# through a private source list in a work directory, and packages are downloaded there, to be
# unpacked with `dpkg -x`, never installed. Debian's signed index vouches for them: apt checks
# each hash against sid's Release file, which the machine's archive keyring verifies.
#
# Sourced by the scripts that fetch from sid; they define `die`. Usage:
#   sid_index WORK              read sid's index into WORK (sets sid_apt, the options for apt)
#   sid_version PACKAGE UPSTREAM
#                               print the Debian version of PACKAGE whose upstream version is
#                               UPSTREAM (any Debian revision); fail naming what sid has
#   sid_download DIR PKG[=V]... download the packages into DIR

sid_index() {
  local work=$1
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
  echo 'deb http://deb.debian.org/debian sid main' >"$work/sources.list"
  sid_apt=(
    -o "Dir::Etc::sourcelist=$work/sources.list"
    -o "Dir::Etc::sourceparts=/dev/null"
    -o "Dir::State::Lists=$work/lists"
    -o "Dir::Cache=$work/cache"
    -o "APT::Sandbox::User=root"  # the private directories are root's own
  )
  apt-get "${sid_apt[@]}" -qq update >&2 || die "cannot read Debian sid's index from deb.debian.org"
}

sid_version() {
  local package=$1 upstream=$2 version have
  version=$(apt-cache "${sid_apt[@]}" madison "$package" \
    | awk -F' *[|] *' -v up="$upstream" 'index($2, up "+") == 1 || $2 ~ "^" up "-" { print $2; exit }')
  if [ -z "$version" ]; then
    have=$(apt-cache "${sid_apt[@]}" madison "$package" | awk -F' *[|] *' '{ print $2 }' | paste -sd' ')
    die "Debian sid no longer has $package $upstream (it has: ${have:-nothing})"
  fi
  echo "$version"
}

sid_download() {
  local dir=$1
  shift
  (cd "$dir" && apt-get "${sid_apt[@]}" -qq download "$@" >&2) || die "cannot download $* from Debian sid"
}
