import Testing
@testable import Observability
