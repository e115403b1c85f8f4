import Testing
@testable import WebPush
