package core

// CallObserver is told of every cloud API call a provider's driver or reader makes: the API
// action ("ModifyListener") and, when the call failed, the cloud's error code
// ("RequestLimitExceeded", "FailedOperation.ResourceInOperating"), else "". A call retried
// after a failure is observed once per attempt. Providers take one in their options
// (tencent.DriverOptions.OnCall, volcengine.CLBReaderOptions.OnCall); a host counts the calls
// with it, as adapters/controller.CloudAPIMetrics does for Prometheus. It must be safe for
// concurrent use and quick: it runs on the calling goroutine.
type CallObserver func(action, code string)
