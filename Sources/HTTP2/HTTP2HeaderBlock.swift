internal import CNghttp2
private import Glibc

/// Header fields packed in one byte buffer, the form every request's headers reach nghttp2 in.
///
/// A sender that submits many requests keeps one block per kind: the fields that never change
/// on a connection (its `authorization`) packed once, and a scratch block that `removeAll()`
/// empties for each request while keeping its storage, so a request costs no array of fields,
/// no strings, and no allocation once the scratch block has grown to size.
///
/// Each field is checked as it is appended (a name that is not a lower-case token, a value with
/// CR, LF or NUL, a pseudo-header after a regular field); the block keeps the first problem and
/// submitting it throws that. So a block made once is checked once, not at every request.
/// A caller whose fields are valid by construction (constant names, values it has held to
/// HTTP/2's rules already) may append them with `checked: false`, which skips that work.
///
/// Each field is stored as a flags byte (1: never index), the name's and the value's byte counts
/// (4 bytes each, little-endian), then the name and the value.
package struct HTTP2HeaderBlock: Sendable, Equatable {
    package private(set) var bytes: [UInt8] = []
    /// How many fields the block holds.
    package private(set) var count = 0
    /// The first field that HTTP/2 does not allow, as the message `submitRequest` throws.
    package private(set) var problem: String?
    private var regularSeen = false

    static let fieldHeaderSize = 9

    package init() {}

    /// The fields in order, names as given.
    package init(_ fields: [HTTP2Header]) {
        for field in fields { append(field.name, field.value, neverIndex: field.neverIndex) }
    }

    /// Empties the block and keeps its storage for the next request.
    package mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        count = 0
        problem = nil
        regularSeen = false
    }

    /// Appends one field.
    /// - Parameter neverIndex: keeps it out of HPACK's dynamic table (see `HTTP2Header.neverIndex`).
    package mutating func append(_ name: String, _ value: String, neverIndex: Bool = false) {
        var value = value
        value.withUTF8 { append(name, bytes: $0, neverIndex: neverIndex) }
    }

    /// Appends one field whose value is given as bytes.
    /// - Parameter checked: false skips the check of name and value (see the type's comment).
    package mutating func append(_ name: String, bytes value: UnsafeBufferPointer<UInt8>, neverIndex: Bool = false,
                                 checked: Bool = true) {
        var name = name
        name.withUTF8 { name in
            append(name: name, neverIndex: neverIndex, valueSize: value.count, checked: checked) { $0.append(contentsOf: value) }
        }
    }

    /// Appends one field read off the wire, name and value as bytes.
    /// Not checked again: nghttp2 has refused what breaks HTTP/2's rules.
    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        append(name: name, neverIndex: false, valueSize: value.count, checked: false) { $0.append(contentsOf: value) }
    }

    /// Appends one field whose value `writeValue` appends to the buffer it is handed, in as many
    /// pieces as it likes (`/3/device/` and a token, digits written in place).
    /// - Parameter checked: false skips the check of name and value (see the type's comment).
    package mutating func append(_ name: String, neverIndex: Bool = false, checked: Bool = true,
                                 value writeValue: (inout [UInt8]) -> Void) {
        var name = name
        // Room for a UUID-sized value; a longer one grows the storage as it is written.
        name.withUTF8 { append(name: $0, neverIndex: neverIndex, valueSize: 36, checked: checked, writeValue) }
    }

    private mutating func append(name: UnsafeBufferPointer<UInt8>, neverIndex: Bool, valueSize: Int, checked: Bool,
                                 _ writeValue: (inout [UInt8]) -> Void) {
        // Grown once for the whole field, not piece by piece (a response's first field was three allocations).
        let needed = bytes.count + Self.fieldHeaderSize + name.count + valueSize
        if needed > bytes.capacity { bytes.reserveCapacity(max(needed, 2 * bytes.capacity, 64)) }
        let start = bytes.count
        // The flags byte and the name's count, then zeros where the value's count goes once known.
        let nameCount = UInt32(truncatingIfNeeded: name.count).littleEndian
        let header: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (
            neverIndex ? 1 : 0, UInt8(truncatingIfNeeded: nameCount), UInt8(truncatingIfNeeded: nameCount >> 8),
            UInt8(truncatingIfNeeded: nameCount >> 16), UInt8(truncatingIfNeeded: nameCount >> 24), 0, 0, 0, 0)
        withUnsafeBytes(of: header) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: name)
        let valueStart = bytes.count
        writeValue(&bytes)
        let valueLength = bytes.count - valueStart
        let regularSeen = self.regularSeen
        let found = bytes.withUnsafeMutableBufferPointer { storage -> String? in
            let raw = UnsafeMutableRawBufferPointer(storage)
            raw.storeBytes(of: UInt32(truncatingIfNeeded: valueLength).littleEndian, toByteOffset: start + 5, as: UInt32.self)
            guard checked else { return nil }
            return Self.problem(name: UnsafeBufferPointer(rebasing: storage[(start + Self.fieldHeaderSize)..<valueStart]),
                                value: UnsafeBufferPointer(rebasing: storage[valueStart...]), afterRegular: regularSeen)
        }
        if problem == nil { problem = found }
        self.regularSeen = regularSeen || name.first != UInt8(ascii: ":")
        count += 1
    }

    /// The first rule of HTTP/2 a field breaks, in words, or nil.
    private static func problem(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, afterRegular: Bool) -> String? {
        let text = { String(decoding: name, as: UTF8.self) }
        let pseudo = name.first == UInt8(ascii: ":")
        if pseudo && afterRegular {
            return "pseudo-header \(text()) comes after a regular field; put the pseudo-headers first"
        }
        if !pseudo && nghttp2_check_header_name(name.baseAddress, name.count) == 0 {
            return "header name \(String(reflecting: text())) is not a valid lower-case HTTP/2 token; rename it"
        }
        if nghttp2_check_header_value(value.baseAddress, value.count) == 0 {
            return "header \(text()) has a value with a forbidden character (CR, LF or NUL); remove it"
        }
        return nil
    }

    /// Every field in order, as views into the block's storage valid during `body` only; never
    /// nil pointers (an empty name or value points where it would start).
    func forEachField(in storage: UnsafeBufferPointer<UInt8>,
                      _ body: (_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, _ neverIndex: Bool) throws -> Void) rethrows {
        guard let base = storage.baseAddress else { return }
        let raw = UnsafeRawBufferPointer(storage)
        var offset = 0
        while offset + Self.fieldHeaderSize <= storage.count {
            let neverIndex = storage[offset] & 1 != 0
            let nameLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 1, as: UInt32.self)))
            let valueLength = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 5, as: UInt32.self)))
            let name = base + offset + Self.fieldHeaderSize
            try body(UnsafeBufferPointer(start: name, count: nameLength),
                     UnsafeBufferPointer(start: name + nameLength, count: valueLength), neverIndex)
            offset += Self.fieldHeaderSize + nameLength + valueLength
        }
    }

    /// The value of the first field named `name` (lower case, as HTTP/2 names are); a string is
    /// made for that value only. A value whose bytes are `known`'s is `known` itself, so a value
    /// the peer echoes (APNs' `apns-id`) costs no new string.
    package func value(_ name: String, reusing known: String? = nil) -> String? {
        var name = name
        return name.withUTF8 { wanted in
            bytes.withUnsafeBufferPointer { storage -> String? in
                var found: String?
                forEachField(in: storage) { fieldName, value, _ in
                    guard found == nil, sameBytes(fieldName, wanted) else { return }
                    if var known, known.withUTF8({ sameBytes($0, value) }) {
                        found = known
                    } else {
                        found = String(decoding: value, as: UTF8.self)
                    }
                }
                return found
            }
        }
    }

    /// The fields as `HTTP2Header`s, for tests and logs.
    package var fields: [HTTP2Header] {
        var fields: [HTTP2Header] = []
        bytes.withUnsafeBufferPointer { storage in
            forEachField(in: storage) { name, value, neverIndex in
                fields.append(HTTP2Header(name: String(decoding: name, as: UTF8.self),
                                          value: String(decoding: value, as: UTF8.self), neverIndex: neverIndex))
            }
        }
        return fields
    }
}

/// Byte-wise equality of two short buffers (header names, echoed ids), without the generic
/// `elementsEqual` path.
func sameBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    guard a.count == b.count else { return false }
    guard let x = a.baseAddress, let y = b.baseAddress else { return true }
    return memcmp(x, y, a.count) == 0
}
