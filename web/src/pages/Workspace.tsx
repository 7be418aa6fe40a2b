import { useEffect, useState, type FormEvent } from 'react';
import { asApiError, call, client, type ApiError, type Schemas } from '../api.js';
import { ErrorBox, Field, Spinner } from '../components/ui.js';
import { useApi } from '../hooks.js';
import { useSession } from '../session.js';
import { SettingsNav } from './SettingsNav.js';

type Settings = Schemas['SettingsDto'];
type Limits = Schemas['Limits'];
type NotifyEvent = Schemas['NotifyEvent'];

const limitFields: Array<{ key: keyof Limits; label: string; hint: string }> = [
  { key: 'timeoutSeconds', label: 'Timeout (seconds)', hint: 'A run is stopped after this long' },
  { key: 'maxTurns', label: 'Agent turns', hint: 'Model calls of one run' },
  { key: 'maxCostUsd', label: 'Cost per run (USD)', hint: 'A run stops when it has spent this much' },
  { key: 'cpus', label: 'CPUs', hint: 'Of the run sandbox' },
  { key: 'memoryMb', label: 'Memory (MB)', hint: 'Of the run sandbox' },
  { key: 'pidsLimit', label: 'Processes', hint: 'Of the run sandbox' },
  { key: 'diskMb', label: 'Disk (MB)', hint: 'Of the run sandbox' },
];

const events: Array<{ key: NotifyEvent; label: string }> = [
  { key: 'run.failed', label: 'A run failed' },
  { key: 'run.fell_back', label: 'A scripted run fell back to the agent' },
  { key: 'job.demoted', label: 'A job was demoted after fallbacks' },
];

/** The form's text for every field, so a half-typed number stays as typed until it is saved. */
interface Draft {
  limits: Record<keyof Limits, string>;
  dailySpendLimitUsd: string;
  retentionDays: string;
  defaultImage: string;
  notifyWebhookUrl: string;
  notifyOn: NotifyEvent[];
  notifySecret: string;
}

function draftOf(s: Settings): Draft {
  return {
    limits: Object.fromEntries(limitFields.map((f) => [f.key, String(s.defaultLimits[f.key])])) as Draft['limits'],
    dailySpendLimitUsd: String(s.dailySpendLimitUsd),
    retentionDays: String(s.retentionDays),
    defaultImage: s.defaultImage ?? '',
    notifyWebhookUrl: s.notifyWebhookUrl ?? '',
    notifyOn: s.notifyOn,
    notifySecret: s.notifySecret ?? '',
  };
}

/**
 * Workspace settings: default run limits, the daily spend cap, retention, the default image and run notifications
 * with a test. Admins and the owner change them; members read them (the API masks the webhook URL for them).
 */
export function WorkspacePage() {
  const { me } = useSession();
  const settings = useApi('settings', (signal) => call(client.GET('/api/settings', { signal })));
  useEffect(() => {
    document.title = 'Workspace settings · svc';
  }, []);
  const canEdit = me ? me.workspace.role !== 'member' : false;
  // Kept here: the form is rebuilt from the saved settings when they come back.
  const [saved, setSaved] = useState(false);
  return (
    <section>
      <h1>Settings</h1>
      <SettingsNav />
      <div className="narrow stack">
        {me && !canEdit && (
          <div className="notice" role="status">
            Only admins and the owner can change these settings; you can read them.
          </div>
        )}
        {saved && (
          <div className="notice ok" role="status">
            Saved.
          </div>
        )}
        <ErrorBox error={settings.error} onRetry={settings.reload} />
        {!settings.data && !settings.error && <Spinner />}
        {settings.data && (
          <SettingsForm
            key={JSON.stringify(settings.data)}
            settings={settings.data}
            canEdit={canEdit}
            onSaving={() => setSaved(false)}
            onSaved={() => {
              setSaved(true);
              settings.reload();
            }}
          />
        )}
      </div>
    </section>
  );
}

function SettingsForm({
  settings,
  canEdit,
  onSaving,
  onSaved,
}: {
  settings: Settings;
  canEdit: boolean;
  /** A save starts: an earlier "Saved." no longer speaks for what is on screen. */
  onSaving: () => void;
  onSaved: () => void;
}) {
  const [d, setD] = useState(() => draftOf(settings));
  const [error, setError] = useState<ApiError | null>(null);
  const [busy, setBusy] = useState(false);
  const [testResult, setTestResult] = useState<{ ok: boolean; text: string } | null>(null);

  const save = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    onSaving();
    try {
      await call(
        client.PATCH('/api/settings', {
          body: {
            defaultLimits: Object.fromEntries(limitFields.map((f) => [f.key, Number(d.limits[f.key])])),
            dailySpendLimitUsd: Number(d.dailySpendLimitUsd),
            retentionDays: Number(d.retentionDays),
            defaultImage: d.defaultImage.trim(),
            notifyWebhookUrl: d.notifyWebhookUrl.trim(),
            notifyOn: d.notifyOn,
            notifySecret: d.notifySecret.trim(),
          },
        }),
      );
      onSaved();
    } catch (err) {
      setError(asApiError(err));
    } finally {
      setBusy(false);
    }
  };
  const sendTest = async () => {
    setTestResult(null);
    setError(null);
    try {
      const r = await call(client.POST('/api/settings/notifications/test'));
      setTestResult({ ok: true, text: `Delivered: the webhook answered ${r.status} in ${r.ms} ms.` });
    } catch (err) {
      setTestResult({ ok: false, text: `Not delivered: ${asApiError(err).message}` });
    }
  };
  const field = (name: string) => error?.field(name);
  return (
    <form className="stack" onSubmit={(e) => void save(e)} aria-label="Workspace settings">
      {error && <ErrorBox error={error} />}
      <fieldset className="card form" disabled={!canEdit}>
        <legend>Default limits of a run</legend>
        <p className="hint">Jobs may lower or raise them within what the sandbox allows.</p>
        <div className="grid">
          {limitFields.map((f) => (
            <Field
              key={f.key}
              label={f.label}
              htmlFor={`limit-${f.key}`}
              hint={f.hint}
              error={field(`defaultLimits.${f.key}`)}
            >
              <input
                id={`limit-${f.key}`}
                inputMode="decimal"
                value={d.limits[f.key]}
                onChange={(e) => setD({ ...d, limits: { ...d.limits, [f.key]: e.target.value } })}
              />
            </Field>
          ))}
        </div>
      </fieldset>
      <fieldset className="card form" disabled={!canEdit}>
        <legend>Spending and keeping</legend>
        <div className="row">
          <Field label="Daily spend cap (USD)" htmlFor="spend-cap" hint="0: no cap" error={field('dailySpendLimitUsd')}>
            <input
              id="spend-cap"
              inputMode="decimal"
              value={d.dailySpendLimitUsd}
              onChange={(e) => setD({ ...d, dailySpendLimitUsd: e.target.value })}
            />
          </Field>
          <Field label="Keep runs for (days)" htmlFor="retention" error={field('retentionDays')}>
            <input
              id="retention"
              inputMode="numeric"
              value={d.retentionDays}
              onChange={(e) => setD({ ...d, retentionDays: e.target.value })}
            />
          </Field>
        </div>
        <Field
          label="Default image"
          htmlFor="default-image"
          hint="Empty: the server's default"
          error={field('defaultImage')}
        >
          <input
            id="default-image"
            value={d.defaultImage}
            onChange={(e) => setD({ ...d, defaultImage: e.target.value })}
          />
        </Field>
      </fieldset>
      <fieldset className="card form" disabled={!canEdit}>
        <legend>Notifications</legend>
        <Field
          label="Webhook URL"
          htmlFor="notify-url"
          hint="Empty: no notifications"
          error={field('notifyWebhookUrl')}
        >
          <input
            id="notify-url"
            type="url"
            value={d.notifyWebhookUrl}
            onChange={(e) => setD({ ...d, notifyWebhookUrl: e.target.value })}
          />
        </Field>
        <div role="group" aria-label="Notify when">
          {events.map((ev) => (
            <label key={ev.key} className="checks">
              <input
                type="checkbox"
                checked={d.notifyOn.includes(ev.key)}
                onChange={(e) =>
                  setD({
                    ...d,
                    notifyOn: e.target.checked ? [...d.notifyOn, ev.key] : d.notifyOn.filter((x) => x !== ev.key),
                  })
                }
              />{' '}
              {ev.label}
            </label>
          ))}
        </div>
        <Field
          label="Signing secret"
          htmlFor="notify-secret"
          hint="The name of a workspace secret; empty: unsigned"
          error={field('notifySecret')}
        >
          <input
            id="notify-secret"
            value={d.notifySecret}
            onChange={(e) => setD({ ...d, notifySecret: e.target.value })}
          />
        </Field>
        <div className="form-actions">
          <button type="button" disabled={settings.notifyWebhookUrl === null} onClick={() => void sendTest()}>
            Send a test notification
          </button>
          {testResult && (
            <span className={testResult.ok ? 'notice ok' : 'error-box'} role={testResult.ok ? 'status' : 'alert'}>
              {testResult.text}
            </span>
          )}
        </div>
      </fieldset>
      {canEdit && (
        <div className="form-actions">
          <button type="submit" className="primary" disabled={busy}>
            Save settings
          </button>
        </div>
      )}
    </form>
  );
}
