"""The platform-neutral core: message model, detector, diagnosis, reply model, formatter, policy."""
