// MockAPNs — an APNs emulator for every test of the relay.
//
// The core here is pure: `MockAPNsRules.decide` judges one request by Apple's rules, written
// again on purpose (this module never imports `APNs`, so a mistake shared with the client
// cannot pass), and returns a `MockDecision` that the TLS + HTTP/2 glue carries out.
// Scripted faults (`MockFaults`) are chosen by device-token prefix; every request is kept
// as a `MockRecord` for assertions.
