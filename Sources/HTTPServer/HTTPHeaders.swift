// HTTP/1.1 message values shared by the parser, the serializer and the socket server.
// Pure Swift, no Foundation: the fuzz build compiles this file with the parser, with the Basics
// files it needs beside it (so it imports that module only in the package build).
#if canImport(Glibc)
import Glibc
#endif
#if !HTTPPARSER_FUZZ
internal import Basics
#endif

/// asked for, and readers on the hot path take the bytes (`withFieldBytes`, `withValue(named:_:)`).
package struct HTTPHeaders: Sendable, Sequence, Equatable, ExpressibleByDictionaryLiteral {
    package typealias Element = (name: String, value: String)

    /// Each field as `nameLength`, `valueLength` (4 bytes each, little-endian), name, value, in
    /// the first `used` bytes; the rest is zeroed room the next fields are written into.
    private var storage: [UInt8] = []
    /// How many bytes of `storage` hold fields.
    private var used = 0
    /// The number of fields, repeats included.
    package private(set) var count = 0

    /// Bytes before each field's name: its two lengths.
    private static let lengthBytes = 8

    package init() {}

    /// Keeps the order of `fields`, so a response's headers go out as written.
    package init(_ fields: [(String, String)]) {
        for (name, value) in fields { add(name, value) }
    }

    /// A dictionary literal keeps its written order here (it is a list of pairs).
    package init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The first value of `name`; the usual way to read a field that should appear once.
    package subscript(name: String) -> String? {
        withValue(named: name) { String(decoding: $0, as: UTF8.self) }
    }

    /// `body` over the bytes of the first value of `name`, without making a String; nil when there
    /// is no such field. The buffer is valid only during the call.
    package func withValue<R>(named name: String, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        try withFieldBytes { fields in try fields.first(named: name).map(body) }
    }

    /// Every value of `name` in arrival order, for list fields and duplicate checks.
    package func values(_ name: String) -> [String] {
        withFieldBytes { fields in
            var result: [String] = []
            fields.forEach(named: name) { result.append(String(decoding: $0, as: UTF8.self)) }
            return result
        }
    }

    /// Whether any field is named `name`.
    package func contains(_ name: String) -> Bool {
        withValue(named: name) { _ in true } ?? false
    }

    /// The fields in arrival order, as Strings: for a reader that walks them all once.
    package var list: [Element] { Array(self) }

    /// Room for `count` fields of a usual size, so they are stored without growing one by one.
    package mutating func reserveCapacity(_ count: Int) {
        reserveBytes(count * 48)
    }

    /// Room for `byteCount` bytes of fields (each field takes its name, its value and 8 bytes).
    mutating func reserveBytes(_ byteCount: Int) {
        if byteCount > storage.count { grow(toHold: byteCount) }
    }

    /// The bytes this value holds, by capacity: part of what a parser holds for its connection.
    var byteCapacity: Int { storage.capacity }

    /// Appends a field, keeping any earlier one of the same name (repeats are legal).
    package mutating func add(_ name: String, _ value: String) {
        // The bytes where they are: copies of the two values cost a retain and release each.
        StringBytes.with(name) { n in StringBytes.with(value) { v in add(name: UnsafeRawBufferPointer(n), value: UnsafeRawBufferPointer(v)) } }
    }

    /// Appends a field whose value is lent as bytes (UTF-8), for a value that is never a String:
    /// the relay's generated request id.
    package mutating func add(_ name: String, bytes value: UnsafeRawBufferPointer) {
        StringBytes.with(name) { n in add(name: UnsafeRawBufferPointer(n), value: value) }
    }

    /// `add` from bytes, for the parser: nothing is decoded until a String is asked for.
    mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        // Written in place into room made beforehand: an array append per piece (two lengths, the
        // name, the value) had a fixed cost several times that of copying a usual field.
        let total = HTTPHeaders.lengthBytes + name.count + value.count
        if used + total > storage.count { grow(toHold: used + total) }
        let at = used
        storage.withUnsafeMutableBytes { room in
            room.storeBytes(of: UInt32(truncatingIfNeeded: name.count).littleEndian, toByteOffset: at, as: UInt32.self)
            room.storeBytes(of: UInt32(truncatingIfNeeded: value.count).littleEndian, toByteOffset: at + 4, as: UInt32.self)
            let nameStart = at + HTTPHeaders.lengthBytes
            if let source = name.baseAddress, !name.isEmpty {
                (room.baseAddress! + nameStart).copyMemory(from: source, byteCount: name.count)
            }
            if let source = value.baseAddress, !value.isEmpty {
                (room.baseAddress! + nameStart + name.count).copyMemory(from: source, byteCount: value.count)
            }
        }
        used += total
        count += 1
    }

    /// Makes room for at least `byteCount` bytes of fields (doubling, so adds stay amortised
    /// O(1)): the fields are copied over and the rest is zeroed, ready to be written in place.
    private mutating func grow(toHold byteCount: Int) {
        let size = Swift.max(byteCount, storage.count * 2, 64)
        let old = storage, kept = used
        storage = [UInt8](unsafeUninitializedCapacity: size) { room, initialized in
            old.withUnsafeBufferPointer { fields in
                if kept > 0 { room.baseAddress!.initialize(from: fields.baseAddress!, count: kept) }
            }
            // One memset: initialising the room byte by byte cost more than the fields written into it.
            _ = memset(room.baseAddress! + kept, 0, size - kept)
            initialized = size
        }
    }

    /// Replaces every field named `name` with one field, for headers that must appear once.
    package mutating func replaceOrAdd(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    /// Removes every field named `name`.
    package mutating func remove(_ name: String) {
        guard contains(name) else { return }
        var kept = HTTPHeaders()
        withFieldBytes { fields in
            fields.forEach { fieldName, value in
                if !asciiCaseInsensitiveEquals(fieldName, name) { kept.add(name: fieldName, value: value) }
            }
        }
        self = kept
    }

    package var isEmpty: Bool { count == 0 }

    /// `body` with every field's bytes: the buffers `FieldBytes` hands out stay valid until `body`
    /// returns, so a reader may keep them for the whole call (the WebPush parser does).
    package func withFieldBytes<R>(_ body: (FieldBytes) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes { try body(FieldBytes(bytes: UnsafeRawBufferPointer(rebasing: $0[..<used]))) }
    }

    /// The fields of one `HTTPHeaders` as bytes, valid during `withFieldBytes`.
    package struct FieldBytes {
        fileprivate let bytes: UnsafeRawBufferPointer

        /// Calls `visit` with each field's name and value, in arrival order.
        package func forEach(_ visit: (_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) throws -> Void) rethrows {
            var i = 0
            while i < bytes.count {
                let nameCount = length(at: i), valueCount = length(at: i + 4)
                let nameStart = i + HTTPHeaders.lengthBytes, valueStart = nameStart + nameCount
                i = valueStart + valueCount
                try visit(UnsafeRawBufferPointer(rebasing: bytes[nameStart..<valueStart]),
                          UnsafeRawBufferPointer(rebasing: bytes[valueStart..<i]))
            }
        }

        /// Calls `visit` with each value of the fields named `name` (in any case), in arrival order.
        package func forEach(named name: String, _ visit: (_ value: UnsafeRawBufferPointer) throws -> Void) rethrows {
            try forEach { fieldName, value in
                if asciiCaseInsensitiveEquals(fieldName, name) { try visit(value) }
            }
        }

        /// The first value of the fields named `name`, or nil.
        package func first(named name: String) -> UnsafeRawBufferPointer? {
            var i = 0
            while i < bytes.count {
                let nameCount = length(at: i), valueCount = length(at: i + 4)
                let nameStart = i + HTTPHeaders.lengthBytes, valueStart = nameStart + nameCount
                i = valueStart + valueCount
                if asciiCaseInsensitiveEquals(UnsafeRawBufferPointer(rebasing: bytes[nameStart..<valueStart]), name) {
                    return UnsafeRawBufferPointer(rebasing: bytes[valueStart..<i])
                }
            }
            return nil
        }

        private func length(at i: Int) -> Int {
            Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt32.self)))
        }
    }

    package struct Iterator: IteratorProtocol {
        fileprivate let storage: [UInt8]
        /// Where the fields end in `storage`.
        fileprivate let end: Int
        fileprivate var offset = 0

        package mutating func next() -> Element? {
            guard offset < end else { return nil }
            return storage.withUnsafeBytes { bytes in
                let nameCount = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                let valueCount = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
                let nameStart = offset + HTTPHeaders.lengthBytes, valueStart = nameStart + nameCount
                offset = valueStart + valueCount
                return (name: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[nameStart..<valueStart]), as: UTF8.self),
                        value: String(decoding: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<offset]), as: UTF8.self))
            }
        }
    }

    package func makeIterator() -> Iterator { Iterator(storage: storage, end: used) }

    package var underestimatedCount: Int { count }

    /// Equal when the same fields arrive in the same order with the same spelling (byte for byte).
    package static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.count == rhs.count && lhs.storage[..<lhs.used] == rhs.storage[..<rhs.used]
    }
}

/// One complete request, body included: the relay needs the whole encrypted body
/// before it can build the APNs payload, so streaming would buy nothing.
