"""What SGLang is, per release: version numbers, flag tables and the release windows of its rules."""
