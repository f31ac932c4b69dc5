package v1

// Hub marks v1, the storage version, as the hub of the Greeter's conversions: every other version converts to and
// from it (controller-runtime's conversion webhook converts spoke to spoke through the hub).
func (*Greeter) Hub() {}
