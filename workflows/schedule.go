package workflows

import (
	"context"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// UpdateSchedule brings the existing Temporal Schedule id to spec and
// action, with overlap skip (a run still going when the next is due is not
// doubled): what a Create that found the schedule already there does next.
func UpdateSchedule(ctx context.Context, sc client.ScheduleClient, id string, spec client.ScheduleSpec, action *client.ScheduleWorkflowAction) error {
	return sc.GetHandle(ctx, id).Update(ctx, client.ScheduleUpdateOptions{
		DoUpdate: func(in client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := in.Description.Schedule
			s.Spec, s.Action = &spec, action
			if s.Policy == nil {
				s.Policy = &client.SchedulePolicies{}
			}
			s.Policy.Overlap = enumspb.SCHEDULE_OVERLAP_POLICY_SKIP
			return &client.ScheduleUpdate{Schedule: &s}, nil
		},
	})
}
