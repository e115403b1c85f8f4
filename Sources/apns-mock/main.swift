print("apns-mock: not built yet")
