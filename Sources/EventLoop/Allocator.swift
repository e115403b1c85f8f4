internal import CLinux

/// The C allocator's knobs that decide whether freed memory goes back to the system.
package enum Allocator {
    /// Hands free heap memory back to the kernel (glibc `malloc_trim(0)`), so RSS falls after a
    /// burst instead of staying at its peak. Walks every arena: call it once per burst, off the
    /// event loops. True when something was released.
    @discardableResult
    package static func giveBackFreeMemory() -> Bool {
        clinux_malloc_trim() == 1
    }

    /// Gives blocks of at least `bytes` a mapping of their own, returned to the kernel the
    /// moment they are freed (glibc `M_MMAP_THRESHOLD`). Request bodies near the 64 KiB limit
    /// otherwise come from the heap, where thousands of them freed out of order leave holes
    /// that keep RSS high; a fixed threshold also stops glibc from raising it on its own after
    /// the first big free. Call once at start-up.
    @discardableResult
    package static func mapBlocks(ofAtLeast bytes: Int) -> Bool {
        clinux_malloc_mmap_threshold(Int32(clamping: bytes)) == 1
    }
}
