package manifest

import stdjson "encoding/json"

func jsonUnmarshal(b []byte, v any) error { return stdjson.Unmarshal(b, v) }
