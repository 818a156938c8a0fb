package anthropic

import (
	"context"
	"errors"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"countersign/engine/models/internal/apierror"
)

// Error is a failed model call; see apierror.Error. Its text opens with
// "anthropic: ".
type Error = apierror.Error

// Kind is the class of an Error: what went wrong, as far as the caller can
// act on it.
type Kind = apierror.Kind

// The kinds of Error; apierror documents each.
const (
	KindAuth          = apierror.KindAuth
	KindModelNotFound = apierror.KindModelNotFound
	KindRateLimited   = apierror.KindRateLimited
	KindServer        = apierror.KindServer
	KindTimeout       = apierror.KindTimeout
	KindCancelled     = apierror.KindCancelled
	KindConnection    = apierror.KindConnection
	KindBadRequest    = apierror.KindBadRequest
	KindBadResponse   = apierror.KindBadResponse
)

// classify turns a failed SDK call into an *Error, with the status and
// message of the SDK's *sdk.Error when err is one. res is the last HTTP
// response, when there was one.
func (m *Model) classify(ctx context.Context, err error, res *http.Response) *Error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return m.errs.Classify(ctx, err, &apierror.Status{Code: apiErr.StatusCode, Message: apiErr.Message}, res)
	}
	return m.errs.Classify(ctx, err, nil, res)
}
