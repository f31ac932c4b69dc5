// The shape of the generated wire table (`generated/k8s-api.ts`, written by scripts/gen-k8s-api.mjs from the
// Kubernetes protobuf definitions): messages with their fields, and the kinds of the stable built-in group versions.

/** One field of a protobuf message; `name` is also its JSON name. */
export interface WireField {
  name: string;
  /** The protobuf field number. */
  id: number;
  /** A scalar protobuf type (`string`, `int32`, `bool`, `bytes`...) or a message id `<package>.<Name>`. */
  type: string;
  /** Set for `map<key, type>` fields: the key's scalar type. */
  map?: string;
  repeated?: boolean;
  patchMergeKey?: string;
  patchStrategy?: string;
  listType?: string;
  listMapKeys?: string[];
  structType?: string;
  mapType?: string;
  /** The `+default=` marker's value as written (a JSON literal or `ref(...)`). */
  default?: string;
  /** Embedded with `json:",inline"`: the message's fields are the parent's in JSON (protobuf keeps the nesting). */
  inline?: boolean;
  /**
   * Listed in the message's OpenAPI `required`: marked `+required`, or marked neither way and not `omitempty` in Go
   * (kube-openapi's rule; the generator's hand list says which unmarked fields are `omitempty`).
   */
  required?: boolean;
}

/** A kind of a stable built-in group version. */
export interface WireKind {
  group: string;
  version: string;
  kind: string;
  /** The message id of the kind's type. */
  message: string;
  /** True when a `<Kind>List` message exists (the kind is stored and listed, not only posted). */
  list: boolean;
  /** Subresources the type declares (`status`, `scale`, `eviction`...). */
  subresources?: string[];
}
