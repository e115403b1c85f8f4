print("apns-relay: not built yet")
