package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

func renderPlan(w io.Writer, format string, rep *PlanReport) error {
	bw := bufio.NewWriterSize(w, 64*1024)
	var err error
	switch format {
	case "json":
		err = streamPlanJSON(bw, rep)
	case "yaml":
		err = renderYAML(bw, rep)
	default:
		err = renderPlanTable(bw, rep)
	}
	if err != nil {
		return err
	}
	return bw.Flush()
}

// streamPlanJSON writes the bytes renderJSON writes, one plan at a time: encoding/json with an
// indent holds the whole report twice (compact, then indented), which on 10,000 Services was
// most of plan's 650 MB of allocations. The report around the plans is encoded with an empty
// plans list and split where the list is.
func streamPlanJSON(w io.Writer, rep *PlanReport) error {
	if len(rep.Plans) == 0 {
		return renderJSON(w, rep)
	}
	head := *rep
	head.Plans = []ObjectPlan{}
	var buf bytes.Buffer
	if err := renderJSON(&buf, &head); err != nil {
		return err
	}
	const marker = "\n  \"plans\": [],"
	i := bytes.Index(buf.Bytes(), []byte(marker))
	if i < 0 {
		return renderJSON(w, rep) // the report's shape changed; stay correct
	}
	before, after := buf.Bytes()[:i+len(marker)-2], buf.Bytes()[i+len(marker)-1:]
	if _, err := w.Write(before); err != nil {
		return err
	}
	var item bytes.Buffer
	enc := json.NewEncoder(&item)
	enc.SetIndent("    ", "  ")
	enc.SetEscapeHTML(false)
	for k := range rep.Plans {
		item.Reset()
		if k > 0 {
			item.WriteByte(',')
		}
		item.WriteString("\n    ")
		if err := enc.Encode(&rep.Plans[k]); err != nil {
			return err
		}
		item.Truncate(item.Len() - 1) // the encoder's newline
		if _, err := w.Write(item.Bytes()); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "\n  ]"); err != nil {
		return err
	}
	_, err := w.Write(after)
	return err
}

// statusColumn is the status with what it amounts to.
func statusColumn(p *ObjectPlan) string {
	n := func(k int, what string) string {
		if k == 1 {
			return "1 " + what
		}
		return strconv.Itoa(k) + " " + what + "s"
	}
	writes, user := 0, 0
	for _, c := range p.Changes {
		if c.By == "user" {
			user++
		} else {
			writes++
		}
	}
	switch p.Status {
	case StatusPlanned:
		return "planned: " + n(writes, "change")
	case StatusUserAction:
		return "user-action: " + n(user, "change") + " for you"
	case StatusBlocked:
		return "blocked: " + p.Blocked.Kind
	case StatusFailed:
		return "failed: " + p.Error.Kind
	case StatusApplied:
		return "applied: " + n(len(p.Written), "change") + " written"
	case StatusPending:
		return "pending: " + n(len(p.Written), "change") + " written, not visible yet"
	}
	return p.Status
}

func changeText(c *PlanChange) string {
	if c.By == "user" {
		target := c.Resource
		if c.Object != nil {
			target = objectKeyText(c.Object)
		}
		s := "you: " + target + ": "
		if c.Field != "" && c.Field != c.To {
			s += c.Field + ": "
		}
		return s + c.To
	}
	target := c.Resource
	if c.Object != nil {
		target = objectKeyText(c.Object)
	}
	from := c.From
	if from == "" {
		from = "(unset)"
	}
	s := fmt.Sprintf("%s: %s: %s: %s → %s", c.By, target, c.Field, from, c.To)
	var how []string
	switch c.Strategy {
	case "apply":
		how = append(how, "server-side apply")
	case "update":
		how = append(how, "update")
	}
	if c.CreateOnly {
		how = append(how, "set only when created")
	} else if c.Create {
		how = append(how, "created if missing")
	}
	if c.Disruptive {
		how = append(how, "disruptive: needs --allow-disruptive")
	}
	if len(how) > 0 {
		s += " (" + strings.Join(how, ", ") + ")"
	}
	return s
}

func objectKeyText(k *ObjectKey) string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// writeError writes "label (kind): message" and what to do about it.
func writeError(w io.Writer, label string, e *PlanError) {
	fmt.Fprintf(w, "    %s (%s): %s\n", label, e.Kind, indentLines(e.Message, "      "))
	switch {
	case e.Ask != "":
		fmt.Fprintf(w, "      ask the cloud's support to enable: %s\n", e.Ask)
	case e.Need != "":
		fmt.Fprintf(w, "      need: %s %s\n", e.Component, e.Need)
	case e.RetryAfterSeconds > 0:
		fmt.Fprintf(w, "      apply again in %ss or later\n", strconv.FormatFloat(e.RetryAfterSeconds, 'f', -1, 64))
	}
}

func renderPlanTable(w io.Writer, rep *PlanReport) error {
	applying := rep.Kind == ApplyReportKind
	if len(rep.Plans) == 0 {
		fmt.Fprintln(w, "No LoadBalancer Service or Ingress to plan.")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "OBJECT\tPROVIDER\tRISK\tREMEDY → PATH\tPLAN")
		for i := range rep.Plans {
			p := &rep.Plans[i]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", objectColumn(p.Object), p.Provider, p.Risk, remedyColumn(&p.Decision), statusColumn(p))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		first := true
		for i := range rep.Plans {
			p := &rep.Plans[i]
			if p.Status == StatusUpToDate && len(p.Changes) == 0 && len(p.Written) == 0 {
				continue
			}
			if first {
				fmt.Fprintln(w, "\nPlans:")
				first = false
			}
			fmt.Fprintf(w, "  %s: %s (%s)\n", objectColumn(p.Object), remedyColumn(&p.Decision), p.Status)
			if p.Status == StatusUnsupported {
				fmt.Fprintf(w, "    unsupported: %s\n", p.Error.Message)
				if p.Decision.Action != "" {
					fmt.Fprintf(w, "    the change, for whoever can make it: %s\n", indentLines(p.Decision.Action, "      "))
				}
				continue
			}
			written := map[string]bool{}
			for _, c := range p.Written {
				written[changeText(&c)] = true
			}
			for _, c := range p.Changes {
				t := changeText(&c)
				label := "change"
				switch {
				case c.By == "user":
					label = "for you"
					t = strings.TrimPrefix(t, "you: ")
				case written[t]:
					label = "wrote"
				case applying && !rep.DryRun && (p.Status == StatusApplied || p.Status == StatusPending || p.Status == StatusUpToDate):
					label = "already so"
				}
				fmt.Fprintf(w, "    %s: %s\n", label, indentLines(t, "      "))
				if c.Reason.Code != "" {
					fmt.Fprintf(w, "      why: %s: %s\n", c.Reason.Code, indentLines(c.Reason.Message, "        "))
				}
				if c.By == "user" {
					if cmd := userCommand(&c); cmd != "" {
						fmt.Fprintf(w, "      %s\n", cmd)
					}
				}
			}
			for _, c := range p.Checks {
				fmt.Fprintf(w, "    then check: %s %s is %v; until then: %s\n", objectKeyText(&c.Object), c.Field, c.Value, indentLines(c.Pending, "      "))
				if cmd := checkCommand(&c); cmd != "" {
					fmt.Fprintf(w, "      %s\n", cmd)
				}
			}
			for _, n := range p.Notes {
				fmt.Fprintf(w, "    note: %s: %s\n", n.Code, indentLines(n.Message, "      "))
			}
			if p.Blocked != nil {
				writeError(w, "blocked", p.Blocked)
			}
			if p.Error != nil {
				label := "error"
				if p.Status == StatusPending {
					label = "not visible yet"
				}
				writeError(w, label, p.Error)
			}
		}
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintln(w, "\nNot load-balancer exposures (skipped):")
		for _, s := range rep.Skipped {
			fmt.Fprintf(w, "  %s: %s\n", objectColumn(s.Object), s.Why)
		}
	}
	s := rep.Summary
	fmt.Fprintf(w, "\n%d planned: %d to write, %d up to date, %d for you, %d blocked, %d unsupported, %d failed", s.Planned, s.ToWrite, s.UpToDate, s.UserAction, s.Blocked, s.Unsupported, s.Failed)
	if applying && !rep.DryRun {
		fmt.Fprintf(w, ", %d applied, %d pending", s.Applied, s.Pending)
	}
	fmt.Fprintf(w, "; %d skipped; %d input errors. Provider %s (%s).\n", s.Skipped, s.Errors, rep.Cluster.Provider, providerFromText(&rep.Cluster))
	notDone := ""
	if k := s.Blocked + s.Failed + s.Pending; k > 0 {
		notDone = fmt.Sprintf("; %d blocked, %d failed, %d pending (above)", s.Blocked, s.Failed, s.Pending)
	}
	switch {
	case !applying:
		fmt.Fprintln(w, "Offline: the inputs are taken as the cluster's state; 'loopguard apply' plans against the live cluster and writes.")
	case rep.DryRun:
		fmt.Fprintf(w, "Dry run: nothing written; %d object(s) have changes to write%s.\n", s.ToWrite, notDone)
	case s.Written == 0 && notDone == "" && s.Planned == 0:
		// Nothing was planned (an --object the cluster lacks, no exposure at all): "already
		// in place" would claim a check that was never made.
		fmt.Fprintln(w, "Nothing written: nothing was planned.")
	case s.Written == 0 && notDone == "" && s.Errors > 0:
		fmt.Fprintln(w, "Nothing written: every planned change is already in place; see the input errors.")
	case s.Written == 0 && notDone == "":
		fmt.Fprintln(w, "Nothing written: every change loopguard makes is already in place.")
	case s.Written == 0:
		fmt.Fprintf(w, "Nothing written%s.\n", notDone)
	default:
		fmt.Fprintf(w, "Wrote %d change(s) to %d object(s)%s.\n", s.Written, s.Applied+s.Pending, notDone)
	}
	fmt.Fprintln(w, verifyHint(applying, rep.DryRun, rep.Plans))
	return nil
}
