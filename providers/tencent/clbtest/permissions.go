package clbtest

import (
	"slices"
	"strings"
)

// CodeAuthUnauthorizedOperation is API 3.0's common code for a call CAM does not allow: "The
// request is not authorized. For more information, see the CAM documentation."
// CodeUnsupportedRegion is its common code for a region the API is not offered in.
const (
	CodeAuthUnauthorizedOperation = "AuthFailure.UnauthorizedOperation"
	CodeUnsupportedRegion         = "UnsupportedRegion"
)

// camAction is the CAM action name of an API action ("clb:ModifyListener").
func camAction(action string) string { return tc3Service + ":" + action }

// authorize applies the CAM policy (Options.AllowedActions) and the served regions
// (Options.Regions) to an authenticated call. The message names the CAM action the way the
// cloud's does ("you are not authorized to perform operation (clb:ModifyListener)"), so a
// caller can tell the user what to grant.
func (s *Server) authorize(req *request) *apiError {
	if len(s.regions) > 0 && !slices.Contains(s.regions, req.region) {
		return errorf(CodeUnsupportedRegion, "The API does not support the region `%s`; this endpoint serves %s.", req.region, strings.Join(s.regions, ", "))
	}
	if s.allowedActions != nil && !s.allowedActions[req.action] && !s.allowedActions["*"] {
		return errorf(CodeAuthUnauthorizedOperation, "you are not authorized to perform operation (%s)\nresource (qcs::clb:%s:uin/*:clb/*) has no permission", camAction(req.action), req.region)
	}
	return nil
}

// allowedActionSet reads Options.AllowedActions: nil stays nil (every action allowed), and
// each entry may be written "ModifyListener", "clb:ModifyListener" or "clb:*".
func allowedActionSet(actions []string) map[string]bool {
	if actions == nil {
		return nil
	}
	set := map[string]bool{}
	for _, a := range actions {
		a = strings.TrimPrefix(a, tc3Service+":")
		set[a] = true
	}
	return set
}
