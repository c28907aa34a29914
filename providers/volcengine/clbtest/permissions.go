package clbtest

import (
	"slices"
	"strings"
)

// authorize applies the served regions (Options.Regions) and the IAM policy
// (Options.AllowedActions) to an authenticated call.
func (s *Server) authorize(action, region string) *apiError {
	if len(s.regions) > 0 && !slices.Contains(s.regions, region) {
		return newAPIError(CodeInvalidRegion, region, strings.Join(s.regions, ", "))
	}
	if s.allowed != nil && !s.allowed[action] && !s.allowed["*"] {
		return newAPIError(CodeAccessDenied, serviceName+":"+action, region)
	}
	return nil
}

// allowedActionSet reads Options.AllowedActions: nil stays nil (every action allowed), and
// each entry may be written "DescribeListeners", "clb:DescribeListeners" or "clb:*".
func allowedActionSet(actions []string) map[string]bool {
	if actions == nil {
		return nil
	}
	set := map[string]bool{}
	for _, a := range actions {
		set[strings.TrimPrefix(a, serviceName+":")] = true
	}
	return set
}
