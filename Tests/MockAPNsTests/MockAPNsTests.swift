import Testing
@testable import MockAPNs
