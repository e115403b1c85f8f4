import Testing
@testable import APNsCore
@testable import APNs
