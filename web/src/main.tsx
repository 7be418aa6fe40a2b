import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { BrowserRouter, Navigate, Route, Routes } from 'react-router-dom';
import { Layout } from './components/Layout.js';
import { SessionProvider } from './session.js';
import { SignInPage } from './pages/SignIn.js';
import { DashboardPage } from './pages/Dashboard.js';
import { JobsPage } from './pages/Jobs.js';
import { NewJobPage } from './pages/NewJob.js';
import { JobPage } from './pages/Job.js';
import { RunPage } from './pages/Run.js';
import { RunsPage } from './pages/Runs.js';
import { McpLandingPage } from './pages/McpLanding.js';
import { McpServersPage } from './pages/McpServers.js';
import { ProvidersPage } from './pages/Providers.js';
import { WorkspacePage } from './pages/Workspace.js';
import { NotFoundPage } from './pages/NotFound.js';
import { SecretsPage } from './pages/Secrets.js';
import { TokensPage } from './pages/Tokens.js';
import { AuditPage } from './pages/Audit.js';
import { MembersPage } from './pages/Members.js';
import { InvitePage } from './pages/Invite.js';
import { AdminUsersPage, AdminWorkspacesPage } from './pages/Admin.js';
import './styles.css';

function App() {
  return (
    <BrowserRouter>
      <SessionProvider>
        <Routes>
          <Route path="/sign-in" element={<SignInPage />} />
          <Route path="/login" element={<SignInPage />} />
          <Route element={<Layout />}>
            <Route index element={<DashboardPage />} />
            <Route path="/jobs" element={<JobsPage />} />
            <Route path="/jobs/new" element={<NewJobPage />} />
            <Route path="/jobs/:id/:tab?" element={<JobPage />} />
            <Route path="/runs" element={<RunsPage />} />
            <Route path="/runs/:id" element={<RunPage />} />
            <Route path="/audit" element={<AuditPage />} />
            <Route path="/mcp" element={<McpLandingPage />} />
            <Route path="/settings" element={<Navigate to="/settings/secrets" replace />} />
            <Route path="/settings/secrets" element={<SecretsPage />} />
            <Route path="/settings/tokens" element={<TokensPage />} />
            <Route path="/settings/mcp" element={<McpServersPage />} />
            <Route path="/settings/providers" element={<ProvidersPage />} />
            <Route path="/settings/workspace" element={<WorkspacePage />} />
            <Route path="/settings/members" element={<MembersPage />} />
            <Route path="/invite/:token" element={<InvitePage />} />
            <Route path="/admin" element={<Navigate to="/admin/users" replace />} />
            <Route path="/admin/users" element={<AdminUsersPage />} />
            <Route path="/admin/workspaces" element={<AdminWorkspacesPage />} />
            <Route path="*" element={<NotFoundPage />} />
          </Route>
        </Routes>
      </SessionProvider>
    </BrowserRouter>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
