import Testing
@testable import APNs
