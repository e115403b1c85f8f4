import Observability
import PushStore

extension RelayServer {
    /// The store of held pushes, or why there is none. A path the operator set that cannot be
    /// used stops start-up; the default path, unusable (a bare binary run as a user), turns
    /// holding off with one warning.
    ///
    /// - Throws: `ConfigurationError` naming `STORE_PATH`.
    static func openHoldStore(_ hold: HoldConfiguration, logger: Logger, metrics: StoreMetrics) throws(ConfigurationError) -> (HeldStoreOwner?, String?) {
        switch hold.store {
        case .off(let why):
            return (nil, why)
        case .redis(let address):
            do {
                return (try HeldStoreOwner(redis: address, limits: hold.limits, metrics: metrics), nil)
            } catch {
                throw ConfigurationError(.invalid, Variable.storeURL, "\(Variable.storeURL): \(error.message)")
            }
        case .file(let path, let chooser):
            do {
                return (try HeldStoreOwner(path: path, limits: hold.limits, metrics: metrics), nil)
            } catch {
                switch chooser {
                case .operatorSetting:
                    throw ConfigurationError(.invalid, Variable.storePath, "\(Variable.storePath): \(error.message)")
                case .defaultPath:
                    let why = "\(error.message); set \(Variable.storePath) to a writable file, or \(Variable.storePath)=none"
                    logger.warning("pushes Apple cannot take will not be held", ["reason": .string(why)])
                    return (nil, why)
                }
            }
        }
    }
}
