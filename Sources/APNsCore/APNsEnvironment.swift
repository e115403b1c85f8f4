/// Which of Apple's two services a push goes to: the device's app build decides (a debug
/// build registers with the sandbox), so the caller must say which.
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable {
    case production
    case sandbox
}
