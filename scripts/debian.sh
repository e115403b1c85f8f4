# Sourced by the scripts that install what they need from Debian's archive (check-deploy.sh,
# image-smoke.sh, nginx-test.sh, docker-test.sh): one way to become root and
# one way to install. Each script decides itself which packages are missing.

# Runs a command as root: directly when already root, else through sudo.
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# install_packages PACKAGE...: installs the packages named (without recommends); nothing
# when none is named.
install_packages() {
    [ $# -gt 0 ] || return 0
    echo "installing $*"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@"
}
