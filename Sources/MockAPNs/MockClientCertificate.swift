/// What the emulator reads from the client certificate the TLS handshake verified against its
/// CA: the facts Apple judges a certificate-authenticated request by. Read from the DER with the
/// emulator's own decoder below, never with the client's code.
public struct MockClientCertificate: Sendable, Equatable {
    /// The subject's UID (0.9.2342.19200300.100.1.1): the app's bundle id, the certificate's topic.
    public var uid: String?
    /// The subject's CN; its prefix names the environment ("Apple Push Services: …").
    public var commonName: String?
    /// The subject's OU: the developer team id.
    public var organizationalUnit: String?
    /// Unix seconds.
    public var notBefore: Int64?
    /// Unix seconds.
    public var notAfter: Int64?

    public init(uid: String?, commonName: String?, organizationalUnit: String?, notBefore: Int64?, notAfter: Int64?) {
        self.uid = uid
        self.commonName = commonName
        self.organizationalUnit = organizationalUnit
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// Reads an X.509 certificate's DER; a part it cannot read stays nil (then the rules answer
    /// 403 `BadCertificate`).
    public init(der: [UInt8]) {
        self.init(uid: nil, commonName: nil, organizationalUnit: nil, notBefore: nil, notAfter: nil)
        // Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version?, serial, signature,
        // issuer, validity SEQUENCE { notBefore, notAfter }, subject, … }, … }
        var outer = DERReader(der, der.indices)
        guard let certificate = outer.next(tag: 0x30) else { return }
        var certificateParts = DERReader(der, certificate)
        guard let tbs = certificateParts.next(tag: 0x30) else { return }
        var fields = DERReader(der, tbs)
        guard var first = fields.next() else { return }
        if first.tag == 0xA0 {  // the explicit version; the serial number follows
            guard let serial = fields.next() else { return }
            first = serial
        }
        guard first.tag == 0x02, fields.next(tag: 0x30) != nil, fields.next(tag: 0x30) != nil,
              let validity = fields.next(tag: 0x30), let subject = fields.next(tag: 0x30) else { return }
        var times = DERReader(der, validity)
        notBefore = times.next().flatMap { Self.unixTime(der, $0) }
        notAfter = times.next().flatMap { Self.unixTime(der, $0) }
        for (oid, value) in Self.attributes(der, subject) {
            switch oid {
            case Self.uidOID: uid = value
            case Self.commonNameOID: commonName = value
            case Self.organizationalUnitOID: organizationalUnit = value
            default: break
            }
        }
    }

    /// Which environments the certificate is for, as Apple's portal names them in the common
    /// name: "Apple Development IOS Push Services: …" the sandbox, "Apple Production IOS Push
    /// Services: …" production, anything else ("Apple Push Services: …") both.
    public enum Environment: Sendable, Equatable {
        case both, sandboxOnly, productionOnly
    }

    public var environment: Environment {
        guard let commonName else { return .both }
        if commonName.hasPrefix("Apple Development IOS Push Services:") { return .sandboxOnly }
        if commonName.hasPrefix("Apple Production IOS Push Services:") { return .productionOnly }
        return .both
    }

    static let uidOID: [UInt8] = [0x09, 0x92, 0x26, 0x89, 0x93, 0xF2, 0x2C, 0x64, 0x01, 0x01]
    static let commonNameOID: [UInt8] = [0x55, 0x04, 0x03]
    static let organizationalUnitOID: [UInt8] = [0x55, 0x04, 0x0B]

    /// Name ::= SEQUENCE OF SET OF SEQUENCE { type OID, value string }, flattened.
    private static func attributes(_ der: [UInt8], _ name: Range<Int>) -> [(oid: [UInt8], value: String)] {
        var found: [(oid: [UInt8], value: String)] = []
        var sets = DERReader(der, name)
        while let set = sets.next(tag: 0x31) {
            var pairs = DERReader(der, set)
            while let pair = pairs.next(tag: 0x30) {
                var parts = DERReader(der, pair)
                guard let oid = parts.next(tag: 0x06), let value = parts.next() else { continue }
                // UTF8String, PrintableString, IA5String: the kinds a subject uses for these.
                guard [0x0C, 0x13, 0x16].contains(value.tag),
                      let text = String(validating: der[value.body], as: UTF8.self) else { continue }
                found.append((Array(der[oid]), text))
            }
        }
        return found
    }

    /// UTCTime (`YYMMDDHHMMSSZ`, years 1950–2049) or GeneralizedTime (`YYYYMMDDHHMMSSZ`) in Unix seconds.
    static func unixTime(_ der: [UInt8], _ element: (tag: UInt8, body: Range<Int>)) -> Int64? {
        let text = Array(der[element.body])
        let yearDigits: Int
        switch (element.tag, text.count) {
        case (0x17, 13): yearDigits = 2
        case (0x18, 15): yearDigits = 4
        default: return nil
        }
        guard text.last == UInt8(ascii: "Z"), text.dropLast().allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        func number(_ from: Int, _ count: Int) -> Int64 {
            text[from..<from + count].reduce(0) { $0 * 10 + Int64($1 - 0x30) }
        }
        var year = number(0, yearDigits)
        if yearDigits == 2 { year += year < 50 ? 2000 : 1900 }
        let at = yearDigits
        let (month, day) = (number(at, 2), number(at + 2, 2))
        let (hour, minute, second) = (number(at + 4, 2), number(at + 6, 2), number(at + 8, 2))
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        return daysFromCivil(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}

/// Walks the DER elements (definite lengths, one-byte tags) inside one range of a buffer.
struct DERReader {
    private let bytes: [UInt8]
    private var index: Int
    private let end: Int

    init(_ bytes: [UInt8], _ range: Range<Int>) {
        self.bytes = bytes
        self.index = range.lowerBound
        self.end = range.upperBound
    }

    /// The next element's tag and the range of its contents; nil at the end or on a bad length.
    mutating func next() -> (tag: UInt8, body: Range<Int>)? {
        guard end - index >= 2 else { return nil }
        let tag = bytes[index]
        var cursor = index + 1
        var length = Int(bytes[cursor])
        cursor += 1
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard (1...4).contains(count), end - cursor >= count else { return nil }
            length = 0
            for _ in 0..<count {
                length = length << 8 | Int(bytes[cursor])
                cursor += 1
            }
        }
        guard length <= end - cursor else { return nil }
        index = cursor + length
        return (tag, cursor..<cursor + length)
    }

    /// The next element's contents if it has this tag; nil otherwise.
    mutating func next(tag: UInt8) -> Range<Int>? {
        guard let element = next(), element.tag == tag else { return nil }
        return element.body
    }
}
