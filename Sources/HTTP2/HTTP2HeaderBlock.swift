/// Header fields packed in one byte buffer, the form every request's headers reach nghttp2 in.
///
/// A sender that submits many requests keeps one block per kind: the fields that never change
/// on a connection (its `authorization`) packed once, and a scratch block that `removeAll()`
/// empties for each request while keeping its storage, so a request costs no array of fields,
/// no strings, and no allocation once the scratch block has grown to size.
///
/// Each field is stored as a flags byte (1: never index), the name's and the value's byte counts
/// (4 bytes each, little-endian), then the name and the value. Names and values are checked when
/// the block is submitted, not here: a block is only bytes until then.
package struct HTTP2HeaderBlock: Sendable, Equatable {
    package private(set) var bytes: [UInt8] = []
    /// How many fields the block holds.
    package private(set) var count = 0

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
    }

    /// Appends one field.
    /// - Parameter neverIndex: keeps it out of HPACK's dynamic table (see `HTTP2Header.neverIndex`).
    package mutating func append(_ name: String, _ value: String, neverIndex: Bool = false) {
        append(name, neverIndex: neverIndex) { $0.append(contentsOf: value.utf8) }
    }

    /// Appends one field read off the wire, name and value as bytes.
    mutating func append(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        append(String(decoding: name, as: UTF8.self), bytes: value)
    }

    /// Appends one field whose value is given as bytes.
    package mutating func append(_ name: String, bytes value: UnsafeBufferPointer<UInt8>, neverIndex: Bool = false) {
        append(name, neverIndex: neverIndex) { $0.append(contentsOf: value) }
    }

    /// Appends one field whose value `writeValue` appends to the buffer it is handed, in as many
    /// pieces as it likes (`/3/device/` and a token, digits written in place).
    package mutating func append(_ name: String, neverIndex: Bool = false, value writeValue: (inout [UInt8]) -> Void) {
        let start = bytes.count
        bytes.append(neverIndex ? 1 : 0)
        bytes.append(contentsOf: repeatElement(0, count: Self.fieldHeaderSize - 1))
        bytes.append(contentsOf: name.utf8)
        let nameLength = bytes.count - start - Self.fieldHeaderSize
        writeValue(&bytes)
        let valueLength = bytes.count - start - Self.fieldHeaderSize - nameLength
        bytes.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: UInt32(truncatingIfNeeded: nameLength).littleEndian, toByteOffset: start + 1, as: UInt32.self)
            raw.storeBytes(of: UInt32(truncatingIfNeeded: valueLength).littleEndian, toByteOffset: start + 5, as: UInt32.self)
        }
        count += 1
    }

    /// Every field in order, as views into the block's storage valid during `body` only.
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
                    guard found == nil, fieldName.elementsEqual(wanted) else { return }
                    if var known, known.withUTF8({ $0.elementsEqual(value) }) {
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
