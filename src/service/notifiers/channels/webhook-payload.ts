/**
 * The data of a webhook notification: the variables of Axiom's custom webhook template (management.md
 * §2.4), and the documented default template's JSON, which the plain `webhook` channel posts.
 */
import type { AlertNotification } from '../channel.js';

/** Go's time.Time.String() in UTC, as Axiom renders the template's times: `2024-06-28 14:45:57.631 +0000 UTC`. */
export function goTimeString(d: Date): string {
  const iso = d.toISOString(); // 2024-06-28T14:45:57.631Z
  const fraction = iso.slice(19, 23).replace(/\.?0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction} +0000 UTC`;
}

export function templateData(n: AlertNotification): Record<string, unknown> {
  return {
    Action: n.action,
    MonitorID: n.monitorId,
    Title: n.title,
    Description: n.description,
    Body: n.body,
    Value: n.value ?? 0,
    QueryStartTime: goTimeString(n.queryStartTime),
    QueryEndTime: goTimeString(n.queryEndTime),
    Timestamp: goTimeString(n.timestamp),
    MatchedEvent: n.matchedEvent,
    GroupKeys: n.groupKeys,
    GroupValues: n.groupValues,
  };
}

/** The default template's output, built as JSON so that quotes in a body cannot break it. */
export function defaultPayload(n: AlertNotification): Record<string, unknown> {
  const d = templateData(n);
  return {
    action: d.Action,
    event: {
      monitorID: d.MonitorID,
      body: d.Body,
      description: d.Description,
      queryEndTime: d.QueryEndTime,
      queryStartTime: d.QueryStartTime,
      timestamp: d.Timestamp,
      title: d.Title,
      value: d.Value,
      matchedEvent: d.MatchedEvent,
      groupKeys: d.GroupKeys,
      groupValues: d.GroupValues,
    },
  };
}
