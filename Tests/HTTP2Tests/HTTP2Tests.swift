import Testing
@testable import HTTP2
