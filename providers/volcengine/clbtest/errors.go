package clbtest

import (
	"fmt"
	"net/http"
)

// Error codes the server returns in ResponseMetadata.Error.Code. Tests can
// compare them with volcengineerr.RequestFailure.Code().
//
// Gateway codes, their CodeN and HTTP status come from Volcengine's public
// error-code table (volcengine.com/docs/6369/68677, mirrored by BytePlus at
// docs.byteplus.com/byteplus-platform/reference/common-error-codes) unless the
// comment says otherwise. The CLB codes come from the BytePlus CLB API
// reference (same API, version 2020-04-01). Guesses are listed in doc.go.
const (
	// CodeMissingParameter (400, CodeN 100002): Action, Version or a
	// required business parameter such as LoadBalancerId is absent.
	CodeMissingParameter = "MissingParameter"
	// CodeMissingAuthenticationToken (401, CodeN 100003): no Authorization.
	CodeMissingAuthenticationToken = "MissingAuthenticationToken"
	// CodeMissingRequestInfo (400, CodeN 100004): e.g. no X-Date header.
	CodeMissingRequestInfo = "MissingRequestInfo"
	// CodeMissingSignature (401, CodeN 100005): Authorization has no Signature.
	CodeMissingSignature = "MissingSignature"
	// CodeInvalidTimestamp (400, CodeN 100006): X-Date is malformed, too old
	// or in the future. The ECS page (docs/6396/70462) lists 403 instead.
	CodeInvalidTimestamp = "InvalidTimestamp"
	// CodeServiceNotFound (404, CodeN 100007): the credential scope names a
	// service other than clb.
	CodeServiceNotFound = "ServiceNotFound"
	// CodeInvalidActionOrVersion (404, CodeN 100008): unknown Action, or a
	// Version other than 2020-04-01.
	CodeInvalidActionOrVersion = "InvalidActionOrVersion"
	// CodeInvalidAccessKey (401, CodeN 100009): the access key ID is unknown.
	CodeInvalidAccessKey = "InvalidAccessKey"
	// CodeSignatureDoesNotMatch (401, CodeN 100010): wrong secret, or the
	// request was changed after signing.
	CodeSignatureDoesNotMatch = "SignatureDoesNotMatch"
	// CodeInvalidAuthorization (400): the Authorization header cannot be
	// parsed (docs/6396/70462; no CodeN published).
	CodeInvalidAuthorization = "InvalidAuthorization"
	// CodeInvalidCredential (400): the Credential part is not
	// <ak>/<yyyymmdd>/<region>/<service>/request (docs/6396/70462).
	CodeInvalidCredential = "InvalidCredential"
	// CodeAccessDenied (403, CodeN 100013): IAM does not allow the caller the action. The
	// message names the action as an IAM policy does ("clb:DescribeListeners"); its exact
	// wording is UNCONFIRMED.
	CodeAccessDenied = "AccessDenied"
	// CodeInvalidRegion (400): the credential scope names a region the endpoint does not
	// serve. UNCONFIRMED: no published code was found for it.
	CodeInvalidRegion = "InvalidRegion"
	// CodeMethodNotAllowed (405): neither GET nor POST (docs/6448/76370).
	CodeMethodNotAllowed = "MethodNotAllowed"
	// CodeInternalError (500, CodeN 100014).
	CodeInternalError = "InternalError"
	// CodeInternalServiceError (502, docs/6448/76370).
	CodeInternalServiceError = "InternalServiceError"
	// CodeServiceUnavailableTemp (503, docs/6448/76370).
	CodeServiceUnavailableTemp = "ServiceUnavailableTemp"
	// CodeInternalServiceTimeout (504, CodeN 100016).
	CodeInternalServiceTimeout = "InternalServiceTimeout"
	// CodeFlowLimitExceeded (429, docs/6448/76370): the gateway's own limit.
	CodeFlowLimitExceeded = "FlowLimitExceeded"
	// CodeAccountFlowLimitExceeded is the per-account, per-API throttling
	// code; Volcengine's own cello CNI treats it and FlowLimitExceeded as the
	// flow-limit pair (cello pkg/provider/volcengine/cellohelper/errors). Its
	// HTTP status (429 here) is UNCONFIRMED.
	CodeAccountFlowLimitExceeded = "AccountFlowLimitExceeded"
	// CodeInvalidParameter (400): a malformed parameter (BytePlus CLB
	// DeleteLoadBalancer lists it; which inputs trigger it is UNCONFIRMED).
	CodeInvalidParameter = "InvalidParameter"
	// CodeLoadBalancerNotFound (404): "The specified LoadBalancer does not
	// exist." (BytePlus CLB DeleteLoadBalancer error table).
	CodeLoadBalancerNotFound = "InvalidLoadBalancer.NotFound"
	// CodeListenerNotFound (404) follows the Invalid<Resource>.<Reason>
	// pattern of the CLB table (InvalidListener.InUse); UNCONFIRMED.
	CodeListenerNotFound = "InvalidListener.NotFound"
	// CodeServerGroupNotFound (404), same pattern (InvalidServerGroup.InUse);
	// UNCONFIRMED.
	CodeServerGroupNotFound = "InvalidServerGroup.NotFound"
)

type codeInfo struct {
	status  int
	codeN   int
	message string
}

// codes maps a code to its HTTP status, published CodeN (0 = none published)
// and message template.
var codes = map[string]codeInfo{
	CodeMissingParameter:           {http.StatusBadRequest, 100002, "The request is missing %s parameter."},
	CodeMissingAuthenticationToken: {http.StatusUnauthorized, 100003, "Request is missing Authentication Token."},
	CodeMissingRequestInfo:         {http.StatusBadRequest, 100004, "The request is missing %s information."},
	CodeMissingSignature:           {http.StatusUnauthorized, 100005, "The request is missing signature."},
	CodeInvalidTimestamp:           {http.StatusBadRequest, 100006, "The Signature of the request is expired."},
	CodeServiceNotFound:            {http.StatusNotFound, 100007, "This service[%s] not found."},
	CodeInvalidActionOrVersion:     {http.StatusNotFound, 100008, "Could not find operation %s for version %s."},
	CodeInvalidAccessKey:           {http.StatusUnauthorized, 100009, "The accesskey [%s] included in the request is invalid."},
	CodeSignatureDoesNotMatch: {http.StatusUnauthorized, 100010, "The request signature we calculated does not match the signature you provided. " +
		"Check your Secret Access Key and signing method. Consult the service documentation for details."},
	CodeInvalidAuthorization:     {http.StatusBadRequest, 0, "Invalid 'Authorization' header, Pls check authorization header."},
	CodeInvalidCredential:        {http.StatusBadRequest, 0, "Invalid credential in 'Authorization', Pls check credential in authorization header."},
	CodeAccessDenied:             {http.StatusForbidden, 100013, "User is not authorized to perform: %s on resource: trn:clb:%s:*:*. Check the IAM policy."},
	CodeInvalidRegion:            {http.StatusBadRequest, 0, "The region %s in the credential scope is not served here; this endpoint serves %s."},
	CodeMethodNotAllowed:         {http.StatusMethodNotAllowed, 0, "The http method %s is not allowed."},
	CodeInternalError:            {http.StatusInternalServerError, 100014, "Service has some internal Error. Pls Contact With Admin."},
	CodeInternalServiceError:     {http.StatusBadGateway, 0, "Internal service error."},
	CodeServiceUnavailableTemp:   {http.StatusServiceUnavailable, 0, "Service is temporarily unavailable."},
	CodeInternalServiceTimeout:   {http.StatusGatewayTimeout, 100016, "Internal Service is timeout. Pls Contact With Admin."},
	CodeFlowLimitExceeded:        {http.StatusTooManyRequests, 0, "Request is too frequent, exceeding the basic rate limit."},
	CodeAccountFlowLimitExceeded: {http.StatusTooManyRequests, 0, "Request rate of %s exceeds the account flow limit."},
	CodeInvalidParameter:         {http.StatusBadRequest, 0, "The specified parameter %s is invalid."},
	CodeLoadBalancerNotFound:     {http.StatusNotFound, 0, "The specified LoadBalancer does not exist."},
	CodeListenerNotFound:         {http.StatusNotFound, 0, "The specified Listener does not exist."},
	CodeServerGroupNotFound:      {http.StatusNotFound, 0, "The specified ServerGroup does not exist."},
}

// HTTPStatus returns the HTTP status the server sends with code: the cloud's
// documented status for the codes declared in this package, 400 otherwise.
func HTTPStatus(code string) int {
	if c, ok := codes[code]; ok {
		return c.status
	}
	return http.StatusBadRequest
}

// codeForStatus picks the gateway code that goes with a bare 4xx/5xx status
// when a Fault names a status but no code.
func codeForStatus(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return CodeFlowLimitExceeded
	case http.StatusBadGateway:
		return CodeInternalServiceError
	case http.StatusServiceUnavailable:
		return CodeServiceUnavailableTemp
	case http.StatusGatewayTimeout:
		return CodeInternalServiceTimeout
	case http.StatusNotFound:
		return CodeInvalidActionOrVersion
	}
	if status >= 500 {
		return CodeInternalError
	}
	return CodeInvalidParameter
}

// apiError is one error response: the envelope's Error plus the HTTP status.
type apiError struct {
	status  int
	code    string
	codeN   int
	message string
}

// newAPIError fills status, CodeN and the message template of code; args
// format the template. Callers never pass secrets as args.
func newAPIError(code string, args ...any) *apiError {
	info, ok := codes[code]
	if !ok {
		return &apiError{status: http.StatusBadRequest, code: code, message: code}
	}
	msg := info.message
	if len(args) > 0 {
		msg = fmt.Sprintf(msg, args...)
	}
	return &apiError{status: info.status, code: code, codeN: info.codeN, message: msg}
}
