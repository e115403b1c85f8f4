import Glibc
import Testing
@testable import EventLoop

@Suite("CPU budget: the loops a process may run")
struct CPUBudgetTests {
    @Test("the smallest of the online CPUs, the affinity mask and the cgroup quota, a quota rounded up, at least 1")
    func decide() {
        #expect(CPUBudget.decide(online: 64, affinity: nil, cgroupV2Max: nil, cgroupV1Quota: nil, cgroupV1Period: nil)
                == CPUBudget(cpus: 64, reason: "online CPUs"))
        #expect(CPUBudget.decide(online: 64, affinity: 4, cgroupV2Max: "max 100000\n", cgroupV1Quota: nil, cgroupV1Period: nil)
                == CPUBudget(cpus: 4, reason: "CPU affinity"))
        // Kubernetes' `limits.cpu: 100m` on a 64-core node: one loop, not 64.
        #expect(CPUBudget.decide(online: 64, affinity: 64, cgroupV2Max: "10000 100000\n", cgroupV1Quota: nil, cgroupV1Period: nil)
                == CPUBudget(cpus: 1, reason: "cgroup v2 cpu.max 10000 100000"))
        // `docker --cpus 1.5`: rounded up to 2.
        #expect(CPUBudget.decide(online: 8, affinity: 8, cgroupV2Max: "150000 100000", cgroupV1Quota: nil, cgroupV1Period: nil).cpus == 2)
        #expect(CPUBudget.decide(online: 8, affinity: nil, cgroupV2Max: nil, cgroupV1Quota: "300000\n", cgroupV1Period: "100000\n")
                == CPUBudget(cpus: 3, reason: "cgroup v1 cpu.cfs_quota_us 300000 / cpu.cfs_period_us 100000"))
        // No quota (v1 -1), or a quota above the affinity: the affinity decides.
        #expect(CPUBudget.decide(online: 8, affinity: 2, cgroupV2Max: nil, cgroupV1Quota: "-1", cgroupV1Period: "100000").reason == "CPU affinity")
        #expect(CPUBudget.decide(online: 8, affinity: 2, cgroupV2Max: "800000 100000", cgroupV1Quota: nil, cgroupV1Period: nil).cpus == 2)
        // Garbage and zeroes change nothing; never below 1.
        #expect(CPUBudget.decide(online: 0, affinity: 0, cgroupV2Max: "0 0", cgroupV1Quota: "x", cgroupV1Period: "y")
                == CPUBudget(cpus: 1, reason: "online CPUs"))
    }

    @Test("this process's budget is at least 1 and at most the online CPUs, and the default group uses it")
    func current() throws {
        let budget = CPUBudget.current
        #expect(budget.cpus >= 1 && budget.cpus <= max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
        #expect(System.coreCount == budget.cpus)
    }
}
