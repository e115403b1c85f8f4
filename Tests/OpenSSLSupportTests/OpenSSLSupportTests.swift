import Testing
@testable import OpenSSLSupport
