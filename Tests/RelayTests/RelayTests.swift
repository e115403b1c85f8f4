import Testing
@testable import Relay
