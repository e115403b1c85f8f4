import Dispatch
import Synchronization
import APNs

/// Proves the credentials the way only Apple can: a push to a device token no device has (all
/// zeros). Apple checks the provider token (or the push certificate and the topic it covers)
/// first, so 400 `BadDeviceToken` means they are good, and a 403 means they are not; nothing is
/// ever delivered.
enum CredentialProbe {
    struct Verdict {
        var credentialsAccepted: Bool
        var message: String
    }

    static let deviceToken = String(repeating: "0", count: 64)

    /// Sends the probe on the production connection and waits for how it ended.
    static func run(client: APNsClient, topic: String) -> Result<APNsResponse, APNsError> {
        let notification: APNsNotification
        do {
            let payload = try APNsAlertPayload(locKey: "apns-default-message").build()
            // Expiration 0: even a mistaken success would not be stored for a device.
            notification = try APNsNotification(token: try DeviceToken(deviceToken), topic: topic, payload: payload,
                                                pushType: .alert, expiration: 0)
        } catch {
            return .failure(error)
        }
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<APNsResponse, APNsError>?>(nil)
        client.send(notification, environment: .production) { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return outcome.withLock { $0 }!
    }

    /// - Parameter certificate: the relay authenticates with a push certificate, not a key.
    static func verdict(_ result: Result<APNsResponse, APNsError>, certificate: Bool = false) -> Verdict {
        let what = certificate ? "push certificate" : "provider token"
        let judged = certificate ? "certificate" : "key"
        let response: APNsResponse
        switch result {
        case .failure(let error):
            // A failed connect is its own verdict, told by its value: what to check, not "no answer".
            if let failure = error.connectFailure {
                return Verdict(credentialsAccepted: false, message: "could not connect to APNs, so the \(judged) was not judged: \(failure)")
            }
            if error.code == .invalidNotification {
                return Verdict(credentialsAccepted: false, message: "cannot build the probe push: \(error.message)")
            }
            return Verdict(credentialsAccepted: false,
                           message: "the probe push to APNs got no answer (\(error.code)): \(error.message)")
        case .success(let r): response = r
        }
        let reason = response.reason?.rawValue ?? ""
        switch response.status {
        case 400 where response.reason == .badDeviceToken, 200:
            return Verdict(credentialsAccepted: true,
                           message: "\(what) accepted: APNs checked it and answered \(response.status) \(reason) for the all-zero probe token")
        case 429 where response.reason == .tooManyProviderTokenUpdates:
            return Verdict(credentialsAccepted: false,
                           message: "APNs refused this check's provider token as one new token too many for the key (429 TooManyProviderTokenUpdates): Apple takes a new token per key at most every 20 minutes, and another token for this key was new less than 20 minutes ago (by another tool, or an older relay that signed a token per process: a relay now presents the same token as this check in each half hour); the key was not judged. Run the check again 20 minutes after that token")
        case 403 where certificate:
            return Verdict(credentialsAccepted: false,
                           message: "APNs refused the push certificate (403 \(reason)): check it is the app's Apple Push Services certificate, for this environment, and not revoked")
        case 403:
            return Verdict(credentialsAccepted: false,
                           message: "APNs refused the provider token (403 \(reason)): check APNS_KEY_ID, APPLE_TEAM_ID and the .p8 key (APNS_AUTH_KEY or APNS_AUTH_KEY_FILE) belong together")
        default:
            return Verdict(credentialsAccepted: false,
                           message: "\(what) accepted, but APNs answered \(response.status) \(reason) to the probe push: check TOPIC (the app's bundle ID) and that the \(judged) may push to it")
        }
    }
}
