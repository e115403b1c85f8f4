import Foundation
import Testing

@Suite("runProcess, the suites' way to run a child")
struct ProductSupportTests {
    @Test("a child that exits without reading its input gives its status; the write that meets the closed pipe is no crash")
    func childIgnoresInput() async throws {
        // More than a pipe holds (64 KiB), so the write is still going when /bin/true has exited.
        let run = try await runProcess(URL(fileURLWithPath: "/bin/true"), [], environment: [:],
                                       input: String(repeating: "x", count: 1 << 20), limit: 30)
        #expect(run.status == 0)
    }
}
