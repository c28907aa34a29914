package clbtest

import (
	"bytes"
	"crypto/subtle"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/volcengine/volc-sdk-golang/base"
)

// serviceName is the service in the credential scope of every CLB call
// (service/clb.ServiceName in volcengine-go-sdk v1.1.35).
const serviceName = "clb"

// xDateLayout is the X-Date format the signer writes ("20201103T104027Z").
const xDateLayout = "20060102T150405Z"

// Credential is an access key pair the server accepts. Its String and
// GoString methods hide the secret so that printing a Credential, or an
// Options holding one, cannot leak it into test logs.
type Credential struct {
	AccessKeyID     string
	SecretAccessKey string
}

// String returns the access key ID with the secret redacted.
func (c Credential) String() string {
	return "Credential{AccessKeyID: " + c.AccessKeyID + ", SecretAccessKey: <redacted>}"
}

// GoString is String, so that %#v redacts too.
func (c Credential) GoString() string { return c.String() }

// authorization is the parsed Authorization header:
// HMAC-SHA256 Credential=<ak>/<yyyymmdd>/<region>/<service>/request,
// SignedHeaders=<h1;h2>, Signature=<hex>.
type authorization struct {
	accessKeyID   string
	date          string
	region        string
	service       string
	signedHeaders []string
}

func parseAuthorization(h string) (authorization, *apiError) {
	const algorithm = "HMAC-SHA256 "
	if !strings.HasPrefix(h, algorithm) {
		return authorization{}, newAPIError(CodeInvalidAuthorization)
	}
	fields := map[string]string{}
	for _, part := range strings.Split(h[len(algorithm):], ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return authorization{}, newAPIError(CodeInvalidAuthorization)
		}
		fields[k] = v
	}
	if fields["Credential"] == "" || fields["SignedHeaders"] == "" {
		return authorization{}, newAPIError(CodeInvalidAuthorization)
	}
	if fields["Signature"] == "" {
		return authorization{}, newAPIError(CodeMissingSignature)
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[0] == "" || len(scope[1]) != 8 || scope[2] == "" || scope[4] != "request" {
		return authorization{}, newAPIError(CodeInvalidCredential)
	}
	return authorization{
		accessKeyID:   scope[0],
		date:          scope[1],
		region:        scope[2],
		service:       scope[3],
		signedHeaders: strings.Split(fields["SignedHeaders"], ";"),
	}, nil
}

// authenticate checks the request signature and returns the access key ID
// and the region of the credential scope. It never puts the secret, the
// expected signature or any derived key into an error or log.
//
// Verification re-signs a copy of the request with the exported signer
// (volc-sdk-golang/base Credentials.Sign, the one the SDK's
// volcengine/signer/volc handler calls): Sign keeps an existing X-Date, so
// with the same method, path, query, signed headers and body it reproduces
// the client's Authorization header exactly when the secret matches.
func (s *Server) authenticate(r *http.Request, body []byte) (ak, region string, e *apiError) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", "", newAPIError(CodeMissingAuthenticationToken)
	}
	a, e := parseAuthorization(h)
	if e != nil {
		return "", "", e
	}
	xDate := r.Header.Get("X-Date")
	if xDate == "" {
		return a.accessKeyID, a.region, newAPIError(CodeMissingRequestInfo, "X-Date")
	}
	signedAt, err := time.Parse(xDateLayout, xDate)
	if err != nil {
		return a.accessKeyID, a.region, newAPIError(CodeInvalidTimestamp)
	}
	if a.service != serviceName {
		return a.accessKeyID, a.region, newAPIError(CodeServiceNotFound, a.service)
	}
	secret, ok := s.secret(a.accessKeyID)
	if !ok {
		return a.accessKeyID, a.region, newAPIError(CodeInvalidAccessKey, a.accessKeyID)
	}
	if skew := s.now().Sub(signedAt); skew > s.maxSkew || -skew > s.maxSkew {
		return a.accessKeyID, a.region, newAPIError(CodeInvalidTimestamp)
	}

	copyReq := &http.Request{
		Method: r.Method,
		URL:    &url.URL{Path: r.URL.Path, RawQuery: r.URL.RawQuery},
		Host:   r.Host,
		Header: http.Header{},
		Body:   io.NopCloser(bytes.NewReader(body)),
	}
	// Copy exactly the headers the client signed: the signer signs every
	// X-* header it finds plus Content-Type, Content-Md5 and Host, so extra
	// headers on the copy would change the SignedHeaders list.
	for _, name := range a.signedHeaders {
		if name == "host" {
			continue
		}
		if v := r.Header.Values(name); len(v) > 0 {
			copyReq.Header[http.CanonicalHeaderKey(name)] = append([]string(nil), v...)
		}
	}
	if copyReq.Header.Get("X-Date") == "" {
		copyReq.Header.Set("X-Date", xDate)
	}
	signed := base.Credentials{
		AccessKeyID:     a.accessKeyID,
		SecretAccessKey: secret,
		Service:         a.service,
		Region:          a.region,
	}.Sign(copyReq)
	want := signed.Header.Get("Authorization")
	if subtle.ConstantTimeCompare([]byte(want), []byte(h)) != 1 {
		return a.accessKeyID, a.region, newAPIError(CodeSignatureDoesNotMatch)
	}
	return a.accessKeyID, a.region, nil
}
