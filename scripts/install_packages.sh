# Sourced by setup.sh and fuzz.sh: install_packages NAME PACKAGE... installs the Debian packages
# that are missing (apt-get update runs only then), as root or with sudo.
install_packages() {
  local name=$1
  shift
  local missing=() package sudo=""
  for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$package")
    fi
  done
  ((${#missing[@]})) || return 0
  echo "$name: installing ${missing[*]}" >&2
  [[ $(id -u) == 0 ]] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
}
