package clbtest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Credential is an API key pair the server accepts.
type Credential struct {
	SecretID  string
	SecretKey string
	// Token, when set, must come with every request as X-TC-Token (temporary credentials).
	// When empty, a request carrying a token is refused.
	Token string
}

// DefaultMaxSkew is how far a request's X-TC-Timestamp may be from the server's clock:
// "Timestamp and server time cannot differ by more than five minutes" (API 3.0 common
// error AuthFailure.SignatureExpire).
const DefaultMaxSkew = 5 * time.Minute

const (
	tc3Algorithm = "TC3-HMAC-SHA256"
	tc3Service   = "clb"
	tc3Terminal  = "tc3_request"
	// unsignedPayload is what the SDK hashes instead of the body when
	// ClientProfile.UnsignedPayload is set (it then sends X-TC-Content-SHA256 with it).
	unsignedPayload = "UNSIGNED-PAYLOAD"
)

// The messages below are the descriptions of API 3.0's common error codes. None of them,
// nor anything else the authenticator answers or logs, contains a secret key, a token or
// an expected signature.
const (
	msgSignatureFailure = "The provided credentials could not be validated. Please check your signature is correct."
	msgSecretIDNotFound = "The SecretId is not found, please ensure that your SecretId is correct."
	msgSignatureExpire  = "Signature expired. Timestamp and server time cannot differ by more than five minutes."
	msgTokenFailure     = "The provided token is invalid."
)

type authorization struct {
	secretID      string
	date          string
	service       string
	signedHeaders []string
	signature     string
}

// parseAuthorization reads "TC3-HMAC-SHA256 Credential=<id>/<date>/<service>/tc3_request,
// SignedHeaders=content-type;host, Signature=<hex>" (docs/sources.md#cloud-apis).
func parseAuthorization(h string) (authorization, *apiError) {
	bad := func(why string) (authorization, *apiError) {
		return authorization{}, errorf(CodeInvalidAuthorization, "Authorization header is invalid: %s. clbtest verifies %s only.", why, tc3Algorithm)
	}
	algo, rest, ok := strings.Cut(strings.TrimSpace(h), " ")
	if h == "" {
		return bad("missing")
	}
	if !ok || algo != tc3Algorithm {
		return bad("unsupported algorithm")
	}
	var a authorization
	var credential string
	for part := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return bad("malformed field")
		}
		switch k {
		case "Credential":
			credential = v
		case "SignedHeaders":
			a.signedHeaders = strings.Split(strings.ToLower(v), ";")
		case "Signature":
			a.signature = v
		}
	}
	scope := strings.Split(credential, "/")
	if len(scope) != 4 || scope[0] == "" || scope[3] != tc3Terminal {
		return bad("malformed Credential")
	}
	a.secretID, a.date, a.service = scope[0], scope[1], scope[2]
	if a.signature == "" || len(a.signedHeaders) == 0 {
		return bad("missing SignedHeaders or Signature")
	}
	return a, nil
}

// authenticate verifies a request's TC3-HMAC-SHA256 signature the way
// tencentcloud-sdk-go common v1.3.156 computes it (client.go sendWithSignatureV3) and
// returns the SecretId. Order of checks: header syntax, timestamp skew, SecretId, scope,
// signature, token.
func (s *Server) authenticate(r *http.Request, body []byte, now time.Time) (string, *apiError) {
	a, err := parseAuthorization(r.Header.Get("Authorization"))
	if err != nil {
		return "", err
	}
	tsHeader := r.Header.Get("X-TC-Timestamp")
	if tsHeader == "" {
		return a.secretID, missing("X-TC-Timestamp")
	}
	ts, perr := strconv.ParseInt(tsHeader, 10, 64)
	if perr != nil {
		return a.secretID, errorf(CodeInvalidParameter, "The value of `X-TC-Timestamp` must be a Unix time in seconds.")
	}
	if skew := now.Sub(time.Unix(ts, 0)).Abs(); skew > s.maxSkew {
		return a.secretID, errorf(CodeSignatureExpire, "%s", msgSignatureExpire)
	}
	cred, ok := s.creds[a.secretID]
	if !ok {
		return a.secretID, errorf(CodeSecretIDNotFound, "%s", msgSecretIDNotFound)
	}
	// The gateway derives the key from its own service name and from the date of the
	// timestamp, so a client that signed for another service or another day fails the
	// signature check rather than getting a special code.
	date := time.Unix(ts, 0).UTC().Format("2006-01-02")
	if a.service != tc3Service || a.date != date {
		return a.secretID, errorf(CodeSignatureFailure, "%s", msgSignatureFailure)
	}
	if !slices.Contains(a.signedHeaders, "content-type") || !slices.Contains(a.signedHeaders, "host") {
		return a.secretID, errorf(CodeSignatureFailure, "%s", msgSignatureFailure)
	}
	got, herr := hex.DecodeString(a.signature)
	if herr != nil {
		return a.secretID, errorf(CodeSignatureFailure, "%s", msgSignatureFailure)
	}
	// Tencent's signing guide lower-cases and trims header values; the Go SDK signs them
	// verbatim (it only ever signs content-type and host, which are lower-case in
	// practice). Accept either form so both clients written from the guide and the SDK
	// verify, including with a mixed-case endpoint host.
	valid := false
	for _, normalise := range []bool{false, true} {
		want := tc3Signature(cred.SecretKey, date, tsHeader, canonicalRequest(r, body, a.signedHeaders, normalise))
		if hmac.Equal(got, want) {
			valid = true
			break
		}
	}
	if !valid {
		return a.secretID, errorf(CodeSignatureFailure, "%s", msgSignatureFailure)
	}
	if r.Header.Get("X-TC-Token") != cred.Token {
		return a.secretID, errorf(CodeTokenFailure, "%s", msgTokenFailure)
	}
	return a.secretID, nil
}

// canonicalRequest is method, "/", query (GET only, as sent), canonical headers, signed
// headers and the payload hash, joined by "\n" (docs/sources.md#cloud-apis). The URI is always "/",
// even when the SDK's endpoint carries a path.
func canonicalRequest(r *http.Request, body []byte, signed []string, normalise bool) string {
	query := ""
	if r.Method == http.MethodGet {
		query = r.URL.RawQuery
	}
	var headers strings.Builder
	for _, name := range signed {
		v := r.Header.Get(name)
		if name == "host" {
			v = r.Host
		}
		if normalise {
			v = strings.ToLower(strings.TrimSpace(v))
		}
		headers.WriteString(name + ":" + v + "\n")
	}
	payload := sha256Hex(body)
	if r.Header.Get("X-TC-Content-SHA256") == unsignedPayload {
		payload = sha256Hex([]byte(unsignedPayload))
	}
	return strings.Join([]string{r.Method, "/", query, headers.String(), strings.Join(signed, ";"), payload}, "\n")
}

// tc3Signature is HMAC-SHA256 over the string to sign, keyed by the chain
// "TC3"+secret → date → service → "tc3_request".
func tc3Signature(secretKey, date, timestamp, canonical string) []byte {
	stringToSign := strings.Join([]string{tc3Algorithm, timestamp, date + "/" + tc3Service + "/" + tc3Terminal, sha256Hex([]byte(canonical))}, "\n")
	k := hmacSHA256([]byte("TC3"+secretKey), date)
	k = hmacSHA256(k, tc3Service)
	k = hmacSHA256(k, tc3Terminal)
	return hmacSHA256(k, stringToSign)
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
