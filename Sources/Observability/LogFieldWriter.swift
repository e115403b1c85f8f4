internal import Basics

/// `JSONLogSink` writes any key) made once, for `LogFieldWriter.add(_:_:)`.
package struct LogKey: Sendable, ExpressibleByStringLiteral {
    package let name: String
    let json: [UInt8]

    package init(_ name: String) {
        self.name = name
        json = JSONBlock.bytes { JSONLogSink.appendKey(name, to: &$0) }
    }

    package init(stringLiteral name: String) { self.init(name) }
}

/// Takes a line's fields in key order: into a list for a record, or (`JSONLogSink`) straight
/// into the line's bytes, formatted exactly as the record's fields would be.
package struct LogFieldWriter {
    /// The fields so far, when they are collected for a record.
    var fields: [LogField] = []
    /// The line's text, when the fields are formatted as they come.
    var line: JSONBlock?
    #if DEBUG
    private var lastKey: String?
    #endif

    init() {}

    /// Adds one field; keys must come in increasing order (the order the line is written in).
    /// The key's JSON was made when the key was: a line written often keeps its keys in
    /// `static let`s, so writing one is a single copy.
    package mutating func add(_ key: LogKey, _ value: LogValue) {
        guard line != nil else { return add(name: key.name, value) }
        #if DEBUG
        checkOrder(key.name)
        #endif
        key.json.withUnsafeBytes { line!.append($0) }
        JSONLogSink.appendValue(value, to: &line!)
    }

    /// Adds one field whose value is text lent as UTF-8 bytes, as `.string` of that text would:
    /// a value written where it is needed (the relay's generated request id) is made no String
    /// for a JSON line.
    package mutating func add(_ key: LogKey, text: UnsafeBufferPointer<UInt8>) {
        guard line != nil else { return add(name: key.name, .string(String(decoding: text, as: UTF8.self))) }
        #if DEBUG
        checkOrder(key.name)
        #endif
        key.json.withUnsafeBytes { line!.append($0) }
        line!.appendQuoted(utf8: text)
    }

    /// Adds one field whose key is made at run time; keys must come in increasing order.
    package mutating func add(name key: String, _ value: LogValue) {
        #if DEBUG
        checkOrder(key)
        #endif
        if line != nil {
            JSONLogSink.appendField(key, value, to: &line!)
        } else {
            fields.append(LogField(key, value))
        }
    }

    /// Lends `text` to a writer for `fields` and takes it back; its array is moved, never copied
    /// (a second reference to it would make the next append copy the whole batch).
    static func formatting(_ text: inout JSONBlock, _ fields: (inout LogFieldWriter) -> Void) {
        var writer = LogFieldWriter()
        writer.line = text
        text.out = []
        fields(&writer)
        text = writer.line!
        writer.line = nil
    }

    #if DEBUG
    private mutating func checkOrder(_ key: String) {
        assert(lastKey.map { $0 < key } ?? true, "log fields out of key order: \(key) after \(lastKey!)")
        lastKey = key
    }
    #endif
}
