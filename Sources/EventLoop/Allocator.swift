internal import CLinux

/// The C allocator's knobs that decide whether freed memory goes back to the system.
public enum Allocator {
    /// Hands free heap memory back to the kernel (glibc `malloc_trim(0)`), so RSS falls after a
    /// burst instead of staying at its peak. Walks every arena: call it once per burst, off the
    /// event loops. True when something was released.
    @discardableResult
    public static func giveBackFreeMemory() -> Bool {
        clinux_malloc_trim() == 1
    }

    /// Caps glibc's malloc arenas at `count`. Each thread otherwise gets an arena of its own
    /// (up to eight per core), and memory freed in one is never reused by another thread, so
    /// a burst leaves several arenas' worth of RSS behind. Call once at start-up, before
    /// threads allocate.
    @discardableResult
    public static func limitArenas(_ count: Int) -> Bool {
        clinux_malloc_limit_arenas(Int32(max(1, count))) == 1
    }
}
