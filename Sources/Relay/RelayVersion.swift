/// The relay's version, written here and nowhere else: `apns-relay --version`, the
/// `apns-relay listening` line and the `relay_build_info` gauge read it. It is source, so every
/// build compiles it in the same way (the Dockerfile's and make ship's `scripts/ship-build.sh`,
/// the debug build); change it in the commit that makes a release.
package enum RelayVersion {
    package static let current = "1.0.0"
}
