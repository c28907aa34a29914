package clbtest

import "fmt"

// Error codes the server answers with. The common codes (AuthFailure.*, InvalidAction,
// NoSuchVersion, MissingParameter, UnknownParameter, RequestLimitExceeded.*) come from
// Tencent Cloud API 3.0's "Common Error Codes" list; the CLB-specific ones from the clb
// v20180317 errors.go of tencentcloud-sdk-go v1.3.156 (docs/sources.md#tke-clb-api).
const (
	CodeInvalidAuthorization = "AuthFailure.InvalidAuthorization"
	CodeSecretIDNotFound     = "AuthFailure.SecretIdNotFound"
	CodeSignatureExpire      = "AuthFailure.SignatureExpire"
	CodeSignatureFailure     = "AuthFailure.SignatureFailure"
	CodeTokenFailure         = "AuthFailure.TokenFailure"

	CodeInvalidAction            = "InvalidAction"
	CodeNoSuchVersion            = "NoSuchVersion"
	CodeMissingParameter         = "MissingParameter"
	CodeUnknownParameter         = "UnknownParameter"
	CodeUnsupportedProtocol      = "UnsupportedProtocol"
	CodeRequestSizeLimitExceeded = "RequestSizeLimitExceeded"
	CodeInternalError            = "InternalError"

	CodeRequestLimitExceeded         = "RequestLimitExceeded"
	CodeUinLimitExceeded             = "RequestLimitExceeded.UinLimitExceeded"
	CodeIPLimitExceeded              = "RequestLimitExceeded.IPLimitExceeded"
	CodeGlobalRegionUinLimitExceeded = "RequestLimitExceeded.GlobalRegionUinLimitExceeded"

	CodeFailedOperation             = "FailedOperation"
	CodeResourceInOperating         = "FailedOperation.ResourceInOperating"
	CodeInvalidParameter            = "InvalidParameter"
	CodeFormatError                 = "InvalidParameter.FormatError"
	CodeLBIDNotFound                = "InvalidParameter.LBIdNotFound"
	CodeListenerIDNotFound          = "InvalidParameter.ListenerIdNotFound"
	CodePortCheckFailed             = "InvalidParameter.PortCheckFailed"
	CodeInvalidParameterValue       = "InvalidParameterValue"
	CodeInvalidParameterLength      = "InvalidParameterValue.Length"
	CodeInvalidParameterRange       = "InvalidParameterValue.Range"
	CodeInvalidFilter               = "InvalidParameterValue.InvalidFilter"
	CodeLimitExceeded               = "LimitExceeded"
	CodeOperationDenied             = "OperationDenied"
	CodeUnauthorizedOperation       = "UnauthorizedOperation"
	CodeUnsupportedOperation        = "UnsupportedOperation"
	CodeResourceInUse               = "ResourceInUse"
	CodeInvalidParameterCombination = "InvalidParameterCombination"
)

// apiError is an error answered inside an HTTP 200 body, the way API 3.0 reports every
// failure: {"Response":{"Error":{"Code","Message"},"RequestId"}}.
type apiError struct {
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errorf(code, format string, args ...any) *apiError {
	return &apiError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func missing(param string) *apiError {
	return errorf(CodeMissingParameter, "The request is missing a required parameter `%s`.", param)
}

// notModelled answers a parameter the cloud accepts but this fake cannot honour. Failing
// loudly is better than answering as if the parameter were applied: a test that relies on
// it would otherwise pass for the wrong reason.
func notModelled(param string) *apiError {
	return errorf(CodeUnsupportedOperation, "clbtest does not model the parameter `%s`.", param)
}

// lbNotFound: the code is in DescribeListeners' documented list (SDK v1.3.156). The message
// wording is UNCONFIRMED; tkestack/tke-extend-network-controller pkg/clb/error.go matches
// both this code and a message containing "LoadBalancer not exist", so the message carries
// that phrase.
func lbNotFound(id string) *apiError {
	return errorf(CodeLBIDNotFound, "LoadBalancer not exist: %s", id)
}

// listenerNotFound: the code is in the SDK's CLB error list; the "some ListenerId ... not
// found" wording is what tke-extend-network-controller matches for listener lookups (seen
// with code InvalidParameter on DeleteLoadBalancerListeners). Which code ModifyListener
// really uses is UNCONFIRMED.
func listenerNotFound(id string) *apiError {
	return errorf(CodeListenerIDNotFound, "some ListenerId [%q] not found", id)
}
