// The store driven from a process of its own:
//   push-store-probe put PATH           puts one-push batches from 8 threads until killed, and
//                                       writes "ack ID N" on stdout the moment push N's put is
//                                       answered (the crash tests kill -9 it at random moments
//                                       and then look for every acknowledged id in the file)
// PATH may be a Redis URL (redis://127.0.0.1:6379/0): the same, through RedisPushStore.
//   push-store-probe bench PATH PUTS THREADS
//                                       PUTS one-push puts from THREADS threads, each waiting for
//                                       its answer before its next put (as concurrent senders
//                                       do): puts/s, commits, puts per commit
//   push-store-probe footprint PATH PUTS
//                                       VmRSS (anonymous + file pages) before the store opens, once
//                                       it is open, after PUTS puts (64 threads) and after they are
//                                       taken and finished
import Foundation
import PushStore
import Synchronization

/// Push number `n` as the probe makes it; the crash tests rebuild it to compare what they read back.
func probePush(_ n: Int) -> HeldPush {
    HeldPush(route: "push", environment: "production", app: "probe", deviceToken: String(format: "%064x", n), topic: "org.example.probe",
             apnsID: "00000000-0000-4000-8000-\(String(format: "%012d", n))", priority: 10, collapseID: n % 2 == 0 ? "c\(n)" : nil,
             pushType: "alert", urgency: "normal", arrivalMs: 1_700_000_000_000 + Int64(n), ttlSeconds: 86_400,
             payload: Array(repeating: UInt8(n % 251), count: 300 + n % 200))
}

/// No cap on the whole, and a device cap as a relay would have one (each push has a device of its own,
/// so it drops nothing but costs its lookup).
let limits = HoldLimits(maxEntries: .max, maxBytes: .max, maxPerDevice: 100)

/// One line on stdout in one write(2), so a kill leaves whole lines or none.
func say(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    bytes.withUnsafeMutableBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(1, buffer.baseAddress! + offset, buffer.count - offset)
            if written <= 0 { exit(3) }
            offset += written
        }
    }
}

/// Puts `push` and waits for its answer.
func putAndWait(_ store: any HeldPushStore, _ push: HeldPush) -> Result<PutReceipt, PushStoreError> {
    let done = DispatchSemaphore(value: 0)
    let outcome = OutcomeBox()
    store.put([push]) { result in
        outcome.value = result
        done.signal()
    }
    done.wait()
    return outcome.value!
}

/// The next push number, shared by the putting threads.
final class Counter: Sendable {
    private let value: Atomic<Int>
    init(_ start: Int) { value = Atomic(start) }
    func next() -> Int { value.add(1, ordering: .relaxed).oldValue }
}

final class OutcomeBox: @unchecked Sendable {
    // Written by the store's writer before the semaphore is signalled, read after the wait.
    var value: Result<PutReceipt, PushStoreError>?
}

final class TakenBox: @unchecked Sendable {
    // Written by the store's writer before the semaphore is signalled, read after the wait.
    var ids: [HeldPushID] = []
}

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write("usage: push-store-probe put PATH [FIRST] | bench PATH PUTS THREADS | footprint PATH PUTS\n".data(using: .utf8)!)
    exit(2)
}
/// This process's resident set in KiB, whole and split: "VmRSS (anonymous + file)" from /proc/self/status.
func residentKiB() -> String {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    func field(_ name: String) -> Int {
        let line = status.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
    return "\(field("VmRSS")) (\(field("RssAnon")) + \(field("RssFile")))"
}
let residentBeforeOpen = residentKiB()

let store: any HeldPushStore
do {
    if arguments[2].hasPrefix("redis://") {
        store = try RedisPushStore(address: try RedisAddress.parse(arguments[2]).get(), limits: limits)
    } else {
        store = try SQLitePushStore(path: arguments[2], limits: limits)
    }
} catch {
    FileHandle.standardError.write("\(error)\n".data(using: .utf8)!)
    exit(1)
}

switch arguments[1] {
case "put":
    // Numbers go on from what the file holds, so each round's pushes are new ones.
    let start = Int(arguments.count > 3 ? arguments[3] : "0") ?? 0
    let counter = Counter(start)
    for _ in 0..<8 {
        Thread {
            while true {
                let n = counter.next()
                switch putAndWait(store, probePush(n)) {
                case .success(let receipt): say("ack \(receipt.ids[0].low) \(n)")
                case .failure(let error): say("fail \(n) \(error)")
                }
            }
        }.start()
    }
    while true { pause() }
case "bench":
    let puts = Int(arguments[3]) ?? 10_000
    let threads = Int(arguments[4]) ?? 64
    let started = DispatchTime.now()
    let group = DispatchGroup()
    let counter = Counter(0)
    for _ in 0..<threads {
        group.enter()
        Thread {
            while true {
                let n = counter.next()
                guard n < puts else { break }
                if case .failure(let error) = putAndWait(store, probePush(n)) { say("fail \(n) \(error)") }
            }
            group.leave()
        }.start()
    }
    group.wait()
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
    let commits = (store as? SQLitePushStore)?.commits ?? (store as? RedisPushStore)?.commits ?? 0
    say(String(format: "puts %d threads %d seconds %.3f puts/s %.0f commits %d puts/commit %.1f",
               puts, threads, seconds, Double(puts) / seconds, commits, Double(puts) / Double(max(commits, 1))))
    store.close()
case "footprint":
    let puts = Int(arguments[3]) ?? 10_000
    let opened = residentKiB()
    let putStart = DispatchTime.now()
    let counter = Counter(0)
    let group = DispatchGroup()
    for _ in 0..<64 {
        group.enter()
        Thread {
            while case let n = counter.next(), n < puts { _ = putAndWait(store, probePush(n)) }
            group.leave()
        }.start()
    }
    group.wait()
    let afterPuts = residentKiB()
    let drainStart = DispatchTime.now()
    var drained = 0
    while true {
        let done = DispatchSemaphore(value: 0)
        let taken = TakenBox()
        store.take(max: 1_000, nowMs: 1_700_000_000_000, leaseMs: 60_000) { taken.ids = (try? $0.get())?.map(\.id) ?? []; done.signal() }
        done.wait()
        if taken.ids.isEmpty { break }
        drained += taken.ids.count
        store.finish(taken.ids) { _ in done.signal() }
        done.wait()
    }
    func perSecond(_ count: Int, since start: DispatchTime, until end: DispatchTime = .now()) -> Int {
        Int(Double(count) / (Double(end.uptimeNanoseconds - start.uptimeNanoseconds) / 1e9))
    }
    say("VmRSS KiB: before open \(residentBeforeOpen), open \(opened), after \(puts) puts \(afterPuts), drained \(residentKiB())")
    say("puts/s \(perSecond(puts, since: putStart, until: drainStart)), drained/s (take 1,000, finish them) \(perSecond(drained, since: drainStart))")
    store.close()
default:
    FileHandle.standardError.write("unknown mode \(arguments[1])\n".data(using: .utf8)!)
    exit(2)
}
