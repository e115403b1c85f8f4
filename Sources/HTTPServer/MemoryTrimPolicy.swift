// When to hand freed heap memory back to the operating system, as pure logic. No I/O.

/// glibc keeps freed memory in its arenas for reuse, so after a burst of big requests the
/// process's RSS stays at the burst's peak (seen: 1.3 GB after every slow client had left).
/// Trimming costs a walk of the heap, so it runs once per burst: when the bytes held by
/// half-received requests and the open connections have both fallen to a quarter of their
/// peak since the last trim, and that peak was big enough to matter.
struct MemoryTrimPolicy {
    /// Peaks below both of these are not worth a trim.
    static let minimumPeakBytes = 4 << 20
    static let minimumPeakConnections = 1000

    private(set) var peakBytes = 0
    private(set) var peakConnections = 0

    /// Records the current figures; true when memory should be trimmed now (the peaks then
    /// start over).
    mutating func observe(bufferedBytes: Int, openConnections: Int) -> Bool {
        peakBytes = max(peakBytes, bufferedBytes)
        peakConnections = max(peakConnections, openConnections)
        let worthIt = peakBytes >= Self.minimumPeakBytes || peakConnections >= Self.minimumPeakConnections
        guard worthIt, bufferedBytes * 4 <= peakBytes, openConnections * 4 <= peakConnections else { return false }
        peakBytes = bufferedBytes
        peakConnections = openConnections
        return true
    }
}
