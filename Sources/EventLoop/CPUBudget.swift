#if canImport(Glibc)
import Glibc
#endif
internal import CLinux
import Observability

/// How many CPUs this process may use, and what decided it: the online CPUs, the affinity mask
/// (`taskset`, `docker --cpuset-cpus`) and the cgroup's CPU quota (v2 `cpu.max`, v1
/// `cpu.cfs_quota_us` / `cpu.cfs_period_us`: Kubernetes' CPU limit, `docker --cpus`), the
/// smallest of them, a quota rounded up, at least 1. Counting only the host's CPUs, a pod
/// limited to one CPU on a 64-core node started 64 loops.
package struct CPUBudget: Sendable, Equatable, CustomStringConvertible {
    package var cpus: Int
    /// What set `cpus`, for the start-up line: `online CPUs`, `CPU affinity`, or the quota read.
    package var reason: String

    package var description: String { "\(cpus) (\(reason))" }

    /// The budget of this process, read once.
    package static let current = measure()

    /// Pure: the decision from what was read (nil: not there, or unreadable).
    /// - Parameters:
    ///   - cgroupV2Max: `cpu.max`'s text, `"max 100000"` (no quota) or `"150000 100000"`.
    ///   - cgroupV1Quota, cgroupV1Period: `cpu.cfs_quota_us` (`-1`: no quota) and `cpu.cfs_period_us`.
    package static func decide(online: Int, affinity: Int?, cgroupV2Max: String?,
                               cgroupV1Quota: String?, cgroupV1Period: String?) -> CPUBudget {
        var budget = CPUBudget(cpus: max(1, online), reason: "online CPUs")
        if let affinity, affinity >= 1, affinity < budget.cpus { budget = CPUBudget(cpus: affinity, reason: "CPU affinity") }
        var quota: (cpus: Int, text: String)?
        if let text = cgroupV2Max?.trimmingWhitespace {
            let parts = text.split(separator: " ")
            if parts.count == 2, let limit = Int(parts[0]), let period = Int(parts[1]), limit > 0, period > 0 {
                quota = (roundedUp(limit, period), "cgroup v2 cpu.max \(limit) \(period)")
            }
        } else if let quotaText = cgroupV1Quota?.trimmingWhitespace, let periodText = cgroupV1Period?.trimmingWhitespace,
                  let limit = Int(quotaText), let period = Int(periodText), limit > 0, period > 0 {
            quota = (roundedUp(limit, period), "cgroup v1 cpu.cfs_quota_us \(limit) / cpu.cfs_period_us \(period)")
        }
        if let quota, quota.cpus < budget.cpus { budget = CPUBudget(cpus: quota.cpus, reason: quota.text) }
        return budget
    }

    private static func roundedUp(_ limit: Int, _ period: Int) -> Int { max(1, (limit + period - 1) / period) }

    /// Reads the online count, the affinity mask and this process's cgroup quota.
    private static func measure() -> CPUBudget {
        let online = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let affinity = Int(clinux_affinity_cpu_count())
        var v2: String?, v1Quota: String?, v1Period: String?
        // /proc/self/cgroup: "0::/path" on v2; "N:cpu,cpuacct:/path" (or "N:cpu:") on v1. In a
        // container the path is usually "/" as the container sees its own cgroup at the root.
        for line in (LocalFile.text(atPath: "/proc/self/cgroup") ?? "").split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            let path = fields[2] == "/" ? "" : String(fields[2])
            if fields[0] == "0", fields[1].isEmpty {
                v2 = LocalFile.text(atPath: "/sys/fs/cgroup\(path)/cpu.max") ?? LocalFile.text(atPath: "/sys/fs/cgroup/cpu.max")
            } else if fields[1].split(separator: ",").contains("cpu") {
                for mount in ["/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"] {
                    for directory in [mount + path, mount] {
                        if let quota = LocalFile.text(atPath: directory + "/cpu.cfs_quota_us"),
                           let period = LocalFile.text(atPath: directory + "/cpu.cfs_period_us") {
                            (v1Quota, v1Period) = (quota, period)
                            break
                        }
                    }
                    if v1Quota != nil { break }
                }
            }
        }
        return decide(online: online, affinity: affinity >= 1 ? affinity : nil, cgroupV2Max: v2,
                      cgroupV1Quota: v1Quota, cgroupV1Period: v1Period)
    }
}
