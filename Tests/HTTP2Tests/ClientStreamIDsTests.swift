import Testing
@testable import HTTP2

/// A frame header and `length` payload bytes (zeros): the scanner reads only headers.
private func frame(type: UInt8, stream: UInt32, length: Int = 3) -> [UInt8] {
    [UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, 0,
     UInt8(stream >> 24 & 0xff), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)]
        + [UInt8](repeating: 0, count: length)
}

private let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
private let headers: UInt8 = 0x1, data: UInt8 = 0x0, ping: UInt8 = 0x6

@Suite("The server's check of client stream ids")
struct ClientStreamIDsTests {
    @Test("frames on opened, open or idle streams pass; only a jumped-over id is flagged")
    func onlySkippedIDs() {
        var scanner = ClientStreamIDs()
        let fine = preface + frame(type: headers, stream: 1) + frame(type: data, stream: 1) + frame(type: headers, stream: 3)
            + frame(type: data, stream: 1) + frame(type: ping, stream: 0, length: 8) + frame(type: data, stream: 9)
        #expect(fine.withUnsafeBytes { scanner.scan($0) } == nil)

        let jump = frame(type: headers, stream: 9)
        let late = frame(type: data, stream: 7)
        let bytes = jump + late
        let violation = bytes.withUnsafeBytes { scanner.scan($0) }
        #expect(violation?.offset == jump.count)
        #expect(violation?.message.contains("DATA on stream 7") == true)
    }

    @Test("a frame header split across reads is judged once whole, flagged at offset 0 of the read that ends it")
    func splitHeader() {
        var scanner = ClientStreamIDs()
        let start = preface + frame(type: headers, stream: 5, length: 40)
        #expect(start.withUnsafeBytes { scanner.scan($0) } == nil)
        let late = frame(type: headers, stream: 3)
        #expect(late[..<4].withUnsafeBytes { scanner.scan($0) } == nil)
        let violation = late[4...].withUnsafeBytes { scanner.scan($0) }
        #expect(violation?.offset == 0)
        #expect(violation?.message.contains("HEADERS on stream 3") == true)
    }

    @Test("the skipped ranges kept are bounded; the oldest are forgotten")
    func bounded() {
        var scanner = ClientStreamIDs()
        var bytes = preface
        for i in 0..<(ClientStreamIDs.maxSkippedRanges + 10) { bytes += frame(type: headers, stream: UInt32(4 * i + 3), length: 0) }
        #expect(bytes.withUnsafeBytes { scanner.scan($0) } == nil)
        #expect(scanner.skipped.count == ClientStreamIDs.maxSkippedRanges)
        // Stream 1 was skipped first and has been forgotten: no longer flagged (lenient, never wrong).
        #expect(frame(type: data, stream: 1).withUnsafeBytes { scanner.scan($0) } == nil)
    }
}
