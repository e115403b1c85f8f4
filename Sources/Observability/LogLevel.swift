// Logging shaped like swift-log: a `Logger` value is passed in (never a global), it carries
// its own metadata, and where the lines go is a `LogSink` chosen once at start-up.


/// How serious a log line is; ordered so a logger can drop everything below its threshold.
package enum LogLevel: String, Sendable, Comparable, CaseIterable {
    case trace, debug, info, notice, warning, error, critical

    /// Declaration order is severity order, so the comparison follows it rather than the raw strings.
    private var severity: Int {
        switch self {
        case .trace: 0
        case .debug: 1
        case .info: 2
        case .notice: 3
        case .warning: 4
        case .error: 5
        case .critical: 6
        }
    }

    package static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.severity < rhs.severity }
}

/// A metadata value. Numbers and booleans stay typed so JSON log consumers can filter on them
/// (`"status": 410` rather than `"status": "410"`).
