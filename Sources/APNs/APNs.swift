@_exported import APNsCore

// APNs — the transport: a client owning a pool of HTTP/2 connections to Apple per environment.
// The models it sends and answers with come from APNsCore, re-exported so `import APNs` is enough.
