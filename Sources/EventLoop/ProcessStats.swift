#if canImport(Glibc)
import Glibc
#endif

/// What `/metrics` says of the process itself, read from procfs at each scrape (Prometheus's
/// `process_*` names, so dashboards and alerts written for other exporters fit).
package enum ProcessStats {
    /// Resident memory (`/proc/self/statm`'s second field, in pages), in bytes; nil off Linux.
    package static func residentBytes() -> Int? {
        guard let text = LocalFile.text(atPath: "/proc/self/statm") else { return nil }
        let fields = text.split(separator: " ")
        guard fields.count >= 2, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Open file descriptors: the entries of `/proc/self/fd`, less the one reading it.
    package static func openFileDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { name in name[0] == UInt8(ascii: ".") }
            if !isDot { count += 1 }
        }
        return max(0, count - 1)
    }

    /// The soft limit on file descriptors (`RLIMIT_NOFILE`).
    package static func maxFileDescriptors() -> Int? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        return limit.rlim_cur == rlim_t.max ? nil : Int(limit.rlim_cur)
    }
}
