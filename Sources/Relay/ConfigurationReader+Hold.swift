import PushStore

extension Reader {
    /// `STORE_PATH` or `STORE_URL`, and the `HOLD_*` caps. `STORE_PATH=none` turns holding off;
    /// `STORE_URL=redis://…` holds in Redis; neither set, the default path is used if it can be
    /// (`RelayServer` checks it at start-up). Both set is refused: which one holds is never a guess.
    func hold() throws(ConfigurationError) -> HoldConfiguration {
        let store: HoldConfiguration.Store
        switch (value(Variable.storePath), value(Variable.storeURL)) {
        case (_?, _?):
            throw ConfigurationError(.invalid, Variable.storeURL,
                                     "\(Variable.storeURL) and \(Variable.storePath) are both set: set one (\(Variable.storeURL) for Redis, \(Variable.storePath) for a SQLite file)")
        case (nil, let url?):
            switch RedisAddress.parse(url) {
            case .success(let address): store = .redis(address)
            case .failure(let error): throw ConfigurationError(.invalid, Variable.storeURL, "\(Variable.storeURL): \(error.message)")
            }
        case (nil, nil): store = .file(path: HoldConfiguration.Defaults.path, chosenBy: .defaultPath)
        case ("none"?, nil): store = .off(why: "\(Variable.storePath)=none")
        case (let path?, nil): store = .file(path: path, chosenBy: .operatorSetting)
        }
        let defaults = HoldConfiguration.Defaults.limits
        let limits = HoldLimits(
            maxEntries: try integer(Variable.holdMaxPushes, default: defaults.maxEntries, in: 1...1_000_000_000, " pushes"),
            maxBytes: try integer(Variable.holdMaxBytes, default: defaults.maxBytes, in: 1 << 20...1 << 44, " bytes"),
            maxPerDevice: try integer(Variable.holdMaxPerDevice, default: defaults.maxPerDevice, in: 1...1_000_000, " pushes per device token"))
        let inFlight = try integer(Variable.holdDeliveryInFlight, default: HoldConfiguration.Defaults.deliveryInFlight, in: 1...10_000,
                                   " held pushes sent at once")
        return HoldConfiguration(store: store, limits: limits, deliveryInFlight: inFlight)
    }
}
