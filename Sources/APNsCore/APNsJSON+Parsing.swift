/// Decodable for callers with their own decoder; the library itself reads JSON with `parse`.
extension APNsJSON: Decodable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int.self) { self = .int(value) }
        else if let value = try? container.decode(Double.self) { self = .double(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([APNsJSON].self) { self = .array(value) }
        else { self = .object(try container.decode([String: APNsJSON].self)) }
    }

    /// Reads a JSON object's text (the app's keys for `data`, given on a command line).
    /// - Throws: `invalidNotification` when it is not JSON or not an object.
    public static func object(parsing text: String) throws(APNsError) -> [String: APNsJSON] {
        guard let value = APNsJSON.parse(text) else {
            throw .invalid("data is not valid JSON: \(text.prefix(80))")
        }
        guard case .object(let members) = value else { throw .invalid("data must be a JSON object, {\"key\": value, …}") }
        return members
    }
}

extension APNsPushType {
    /// Looks a type up by its header value; the error lists the valid ones.
    public static func named(_ name: String) throws(APNsError) -> APNsPushType {
        guard let type = APNsPushType(rawValue: name) else {
            throw .invalid("push type \"\(name)\" is unknown; use one of \(allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return type
    }
}

extension APNsInterruptionLevel {
    public static let allCases: [APNsInterruptionLevel] = [.passive, .active, .timeSensitive, .critical]

    /// Looks a level up by its value; the error lists the valid ones.
    public static func named(_ name: String) throws(APNsError) -> APNsInterruptionLevel {
        guard let level = allCases.first(where: { $0.rawValue == name }) else {
            throw .invalid("interruption level \"\(name)\" is unknown; use one of \(allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return level
    }
}

extension APNsSound {
    /// A name, or the critical dictionary as JSON: `{"critical":1,"name":"alarm.caf","volume":0.8}`.
    public static func parse(_ text: String) throws(APNsError) -> APNsSound {
        guard text.hasPrefix("{") else { return .named(text) }
        let members: [String: APNsJSON]
        do { members = try APNsJSON.object(parsing: text) } catch {
            throw .invalid("sound must be a name or {\"critical\":1,\"name\":…,\"volume\":…}; got \(text.prefix(80))")
        }
        var name = "default", volume = 1.0
        if case .string(let n)? = members["name"] { name = n }
        switch members["volume"] {
        case .double(let v)?: volume = v
        case .int(let v)?: volume = Double(v)
        default: break
        }
        return .critical(name: name, volume: volume)
    }
}
